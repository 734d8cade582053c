import t from 'tap';
import { validateOdds, validateOddsItem, validateStale, validateSuspend } from '../../src/ingest/validate-odds.js';
import { checkPrices, pricingOf } from '../../src/ingest/prices.js';
import { INGEST_LIMITS } from '../../src/odds/messages.js';
import type { OddsImage } from '../../src/odds/image.js';

/**
 * What an odds item must be before its market can see it, without a server: the shape (every
 * field named when wrong), then the prices its market can have. A refused image names the field
 * so the publisher can fix it; an accepted one is exactly what was sent, extra fields dropped.
 */
const runner = (rid: number, b: number[][] = [[2, 10]], l: number[][] = [[2.02, 5]]) => ({ rid, st: 'ACTIVE', b, l });
const item = (over: Record<string, unknown> = {}) => ({ kind: 'odds', mid: '1.234', ts: 1_700_000_000_000, st: 'OPEN', ip: false, r: [runner(1), runner(2)], ...over });
const errorOf = (r: { error: string } | object) => ('error' in r ? r.error : undefined);

t.test('a well-formed image is taken as sent, in the service\'s names: fields it does not carry are dropped', async (t) => {
  const r = validateOdds(item({ extra: 'ignored', r: [{ ...runner(1), ltp: 2.01, tv: 1500, foo: 1 }] }));
  t.notOk(errorOf(r));
  const image = (r as { image: OddsImage }).image;
  t.strictSame(image, {
    marketId: '1.234', sourceTime: 1_700_000_000_000, status: 'OPEN', inPlay: false,
    runners: [{ runnerId: 1, status: 'ACTIVE', back: [[2, 10]], lay: [[2.02, 5]], lastTraded: 2.01, tradedVolume: 1500 }],
  });
});

t.test('each malformed field is refused, naming it', async (t) => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['a market ID with a space', { mid: '1 234' }, /^mid must match/],
    ['a source time as a string', { ts: '1700000000000' }, /^ts must be the source time in milliseconds$/],
    ['a negative source time', { ts: -1 }, /^ts must be/],
    ['an unknown market status', { st: 'open' }, /^st must be one of OPEN/],
    ['in-play as a string', { ip: 'false' }, /^ip must be true or false$/],
    ['runners not an array', { r: {} }, /^r must be an array of at most \d+ runners$/],
    ['too many runners', { r: Array.from({ length: INGEST_LIMITS.runners + 1 }, (_, i) => runner(i + 1)) }, /^r must be an array of at most/],
    ['a runner without an ID', { r: [{ st: 'ACTIVE', b: [], l: [] }] }, /^r\[0\]\.rid must be a positive integer$/],
    ['a runner status unknown', { r: [{ ...runner(1), st: 'active' }] }, /^r\[0\]\.st must be one of/],
    ['a level of one number', { r: [runner(1, [[2]])] }, /^r\[0\]\.b\[0\] must be \[price, size\] with two numbers$/],
    ['a price as a string (as an exchange sends them)', { r: [runner(1, [['2.5', 10]] as never)] }, /^r\[0\]\.b\[0\] must be \[price, size\]/],
    ['a price of NaN', { r: [runner(1, [[Number.NaN, 10]])] }, /^r\[0\]\.b\[0\] must be/],
    ['too deep a ladder', { r: [runner(1, Array.from({ length: INGEST_LIMITS.levels + 1 }, (_, i) => [2 + i / 100, 1]))] }, /^r\[0\]\.b must be an array of at most/],
    ['a runner repeated', { r: [runner(3), runner(3)] }, /^r\[1\]\.rid repeats runner 3$/],
    ['a last traded price that is not a number', { r: [{ ...runner(1), ltp: '2.1' }] }, /^r\[0\]\.ltp must be a number/],
    ['a negative traded volume', { tv: -5 }, /^tv must be a traded volume from 0/],
  ];
  for (const [what, over, error] of cases) t.match(errorOf(validateOdds(item(over))), error, what);
});

t.test('late must be a boolean; stale items name a known reason', async (t) => {
  t.match(errorOf(validateOddsItem(item({ late: 'yes' }))), /^late must be true or false$/);
  t.same(validateOddsItem(item({ late: true })), { image: (validateOdds(item()) as { image: OddsImage }).image, late: true });
  t.same(validateStale({ kind: 'stale', mid: '1.234', why: 'late' }), { mid: '1.234', why: 'late' });
  t.match(errorOf(validateStale({ kind: 'stale', mid: '1.234', why: 'because' })), /^why must be one of/);
  t.match(errorOf(validateStale({ kind: 'stale', why: 'late' })), /^mid must match/);
});

t.test('a suspend item names its event only: one naming a market too is refused, not taken as a stop of the whole event', async (t) => {
  const stop = { kind: 'suspend', eid: 30000011, sr: 'goal', ts: 1_700_000_000_000 };
  t.same(validateSuspend(stop), { stop: { eventId: 30000011, suspensionReason: 'goal', sourceTime: 1_700_000_000_000 } });
  t.equal(errorOf(validateSuspend({ ...stop, mid: '1.234' })),
    'mid has no place on a suspend item, which stops every market of its event (eid): to suspend one market, send its odds image with st SUSPENDED');
});

t.test('prices a runner market cannot have are refused, naming the level and the rule', async (t) => {
  const image = (b: number[][], l: number[][]) => (validateOdds(item({ r: [runner(1, b, l)] })) as { image: OddsImage }).image;
  t.equal(checkPrices(image([[2, 10], [1.99, 5]], [[2.02, 5], [2.04, 5]]), 'runner'), undefined, 'a sound ladder');
  t.match(checkPrices(image([[1.99, 5], [2, 10]], [[2.02, 5]]), 'runner'), /^r\[0\]\.b\[1\]\[0\] 2 after 1\.99: .* levels must fall strictly from the best/);
  t.match(checkPrices(image([[2.1, 10]], [[2.02, 5]]), 'runner'), /^r\[0\] is crossed, .* 2\.1 against .* 2\.02/);
  t.match(checkPrices(image([[1001, 10]], []), 'runner'), /^r\[0\]\.b\[0\]\[0\]/, 'above the exchange\'s 1000');
  t.match(checkPrices(image([[2, -1]], []), 'runner'), /^r\[0\]\.b\[0\]\[1\]/, 'a negative size');
});

t.test('a session (line) market without runners is priced as a line; with runners, or any other type, by odds', async (t) => {
  t.equal(pricingOf('session', false), 'line');
  t.equal(pricingOf('session', true), 'runner');
  t.equal(pricingOf(null, false), 'runner');
});
