import t from 'tap';
import { AGE_SINCE_MS, formatAge } from '../../src/client/format.js';

t.test('an age reads in the unit a person takes in at a glance, and past a day as since when', async (t) => {
  const now = Date.UTC(2026, 10, 28, 12, 0);
  t.equal(formatAge(-5, now), '0 ms', 'clocks a little apart: never negative');
  t.equal(formatAge(850, now), '850 ms');
  t.equal(formatAge(12_400, now), '12 s');
  t.equal(formatAge(5 * 60_000, now), '5 min');
  t.equal(formatAge(3 * 3_600_000, now), '3 h');
  t.equal(formatAge(AGE_SINCE_MS - 1, now), '24 h');
  t.equal(formatAge(AGE_SINCE_MS, now), 'no data since 2026-11-27 12:00 UTC');
  // The stale market: 18,263,643 s, some 211 days.
  t.equal(formatAge(18_263_643_000, now), 'no data since 2026-05-01 02:45 UTC');
});
