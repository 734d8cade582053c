import t from 'tap';
import { isoInstant } from '../../src/lib/iso-time.js';
import { instant } from '../../src/http/record-routes.js';
import { parseQuery } from '../../src/http/request.js';

/**
 * An ISO 8601 date-time with its zone as the service reads it (ingest's times, the record's
 * `from`, `to` and `at`): the instant it names, or none for a day or time the calendar does not
 * have, which Date.parse would move to the next day (30 February as 2 March).
 */
t.test('a date-time that exists is the instant it names; one that does not is NaN; anything else undefined', async (t) => {
  t.equal(isoInstant('2026-11-25T12:01:03.250Z'), Date.UTC(2026, 10, 25, 12, 1, 3, 250));
  t.equal(isoInstant('2030-01-01T23:30+05:30'), Date.UTC(2030, 0, 1, 18, 0));
  t.equal(isoInstant('2028-02-29T00:00Z'), Date.UTC(2028, 1, 29), 'a leap day');
  for (const s of ['2026-02-30T00:00:00Z', '2026-04-31T00:00Z', '2026-01-01T24:00Z', '2026-01-01T12:00+05:60']) t.ok(Number.isNaN(isoInstant(s)), s);
  for (const s of ['2026-02-03', 'tomorrow', '2026-02-03T00:00', '2026-02-03 00:00Z']) t.equal(isoInstant(s), undefined, s);
});

t.test('the record\'s times: ms or ISO 8601; a day the calendar does not have is refused naming it, not read as the next', async (t) => {
  const at = (raw: string) => instant(parseQuery(`to=${encodeURIComponent(raw)}`), 'to');
  t.equal(at('1795949020269'), 1795949020269);
  t.equal(at('2026-03-02T00:00:00Z'), Date.UTC(2026, 2, 2));
  t.throws(() => at('2026-02-30T00:00:00Z'), { code: 'BAD_PARAM', message: /to must be a date and time that exist: 2026-02-30T00:00:00Z does not/ });
  t.throws(() => at('soon'), { code: 'BAD_PARAM', message: /to must be a time in ms since 1970, or ISO 8601/ });
  t.equal(instant(parseQuery(''), 'to', 7), 7, 'absent: the fallback');
});
