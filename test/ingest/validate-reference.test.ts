import t from 'tap';
import { validateReference } from '../../src/ingest/validate.js';

/**
 * An event's start time as ingest takes it, without a server: a date-time that exists, with its
 * zone, stored as the instant it names; a day or time the calendar does not have is refused,
 * naming the field, not moved to the day after.
 */
const startOf = (st: unknown) => {
  const r = validateReference({ kind: 'event', eid: 1, st });
  return 'error' in r ? r.error : (r.item as { startTime?: string }).startTime;
};

t.test('a date-time that exists is taken as the instant it names', async (t) => {
  t.equal(startOf('2030-01-01T19:00:00.000Z'), '2030-01-01T19:00:00.000Z');
  t.equal(startOf('2028-02-29T12:00Z'), '2028-02-29T12:00:00.000Z', 'a leap day');
  t.equal(startOf('2030-01-01T23:30:00+05:30'), '2030-01-01T18:00:00.000Z', 'with an offset');
  t.equal(startOf('2030-12-31T23:59:59-12:00'), '2031-01-01T11:59:59.000Z', 'an offset that moves it into the next year');
});

t.test('a day or time the calendar does not have is refused, naming st, not moved', async (t) => {
  for (const st of ['2031-02-30T12:00:00.000Z', '2031-04-31T12:00:00Z', '2030-02-29T12:00Z', '2030-13-01T12:00Z', '2030-00-10T12:00Z',
    '2030-01-00T12:00Z', '2030-01-01T24:00Z', '2030-01-01T12:60Z', '2030-01-01T12:00:60Z', '2030-01-01T12:00+24:00', '2030-01-01T12:00+05:60']) {
    t.equal(startOf(st), `st must be a date and time that exist: ${st} does not`, st);
  }
  t.match(startOf('tomorrow'), /st must be an ISO 8601 date-time with a time zone/);
  t.match(startOf('1899-12-31T23:59Z'), /st must be between the years 1900 and 9999/);
});

t.test('a player race naming one nested market twice is refused, naming the repeat; an unknown kind names every kind', async (t) => {
  const nested = (mid: string) => ({ mid, s: true, go: false, r: [{ rid: 1, na: 'A' }] });
  const r = validateReference({ kind: 'market', mid: '5.2', ty: 'player-race', m: [nested('5.2.1'), nested('5.2.2'), nested('5.2.1')] });
  t.equal('error' in r && r.error, 'm[2].mid repeats nested market 5.2.1');
  const ok = validateReference({ kind: 'market', mid: '5.2', ty: 'player-race', m: [nested('5.2.1'), nested('5.2.2')] });
  t.notOk('error' in ok, 'two different nested markets are taken');
  const kind = validateReference({ kind: 'nope' });
  t.equal('error' in kind && kind.error, 'kind must be one of sport, league, event, market, result, terms, odds, stale, suspend');
});
