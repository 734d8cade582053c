/**
 * Odds items at ingest, three sections over one service: the simulator's section feeds markets
 * of its own, and the one price test that watches a market's state publishes good images of it
 * first, whatever the tests before it left.
 *
 * What was last traded and how much, through the whole path: a publisher sends `ltp` and `tv`
 * on an odds item in either format, and subscribers in either format receive exactly those
 * values, or no such keys when the publisher sent none.
 *
 * Whose odds go out: the simulator's until another publisher feeds the market, and never after.
 *
 * The prices a market can have, enforced at ingest: runner markets by decimal odds, line
 * markets by run lines and rates. A refusal names the item and the rule; the image is refused
 * alone, its market is unreliable until its next image, and the batch's other images are published.
 */
import t, { type Test } from 'tap';
import { postJson, startTestService } from '../helpers/service.js';
import { sqlClient } from '../helpers/db.js';
import { Client, image, ingestOnSocket, type Format } from '../helpers/ws.js';
import { OutsideFeeds } from '../../src/ingest/outside.js';
import { marketIdOf as demoMid } from '../../src/demo/markets.js';
import type { Market } from '../../src/refdata/types.js';
import type { ItemRefusal, OddsMessage } from '../../src/odds/messages.js';

const svc = await startTestService(t);
const MATCH_ODDS = '1.200001001';
const BOOKMAKER = '1.200001002';

type Obj = Record<string, unknown>;
const traded = (mid: string, ts: number): Obj => ({
  kind: 'odds', mid, ts, st: 'OPEN', ip: true, tv: 152340.5,
  r: [
    { rid: 101, st: 'ACTIVE', b: [[1.95, 120.5], [1.94, 300]], l: [[1.97, 80], [1.98, 40]], ltp: 1.96, tv: 100000.25 },
    { rid: 102, st: 'ACTIVE', b: [[2.02, 50]], l: [[2.06, 70]], ltp: 2.04, tv: 52340.25 },
  ],
});
const bare = (mid: string, ts: number): Obj => ({
  kind: 'odds', mid, ts, st: 'OPEN', ip: true, r: [{ rid: 101, st: 'ACTIVE', b: [[1.95, 10]], l: [[1.97, 10]] }],
});

/** A JSON and a protobuf subscriber of `mid`, with the query given (e.g. a depth). */
async function subscribers(t: Test, mid: string, depth?: number): Promise<Client[]> {
  const out = await Promise.all((['json', 'proto'] as const).map((format) => Client.connect(svc.url, { format })));
  for (const c of out) {
    t.teardown(() => c.close());
    await c.request({ op: 'subscribe', mids: [mid], ...(depth ? { depth } : {}) });
  }
  return out;
}

const frameAt = (c: Client, mid: string, ts: number) =>
  c.next((f) => f.op === 'odds' && f.mid === mid && f.ts === ts) as Promise<OddsMessage>;
/** What a frame says of the image, without the frame's own numbering. */
const imageOf = ({ mid, ts, st, ip, r, tv }: OddsMessage): Obj => ({ kind: 'odds', mid, ts, st, ip, ...(tv === undefined ? {} : { tv }), r });

for (const format of ['json', 'proto'] as Format[]) {
  t.test(`ltp and tv published in ${format} reach a JSON and a protobuf subscriber exactly`, async (t) => {
    const subs = await subscribers(t, MATCH_ODDS);
    const ts = Date.now() + (format === 'json' ? 0 : 1);
    const item = traded(MATCH_ODDS, ts);
    t.equal((await ingestOnSocket(svc.url, format, [item])).status, 1);
    for (const c of subs) t.strictSame(imageOf(await frameAt(c, MATCH_ODDS, ts)), item, `${c.format} subscriber`);
  });
}

t.test('an image without ltp and tv has no such keys on frames of either format', async (t) => {
  const subs = await subscribers(t, BOOKMAKER);
  const ts = Date.now();
  t.equal((await ingestOnSocket(svc.url, 'proto', [bare(BOOKMAKER, ts)])).status, 1);
  for (const c of subs) {
    const f = await frameAt(c, BOOKMAKER, ts);
    t.notOk('tv' in f, `${c.format}: no market tv`);
    t.notOk('ltp' in f.r[0] || 'tv' in f.r[0], `${c.format}: no runner ltp or tv`);
  }
});

t.test('a volume of 0 is a volume, not an absent one', async (t) => {
  const subs = await subscribers(t, BOOKMAKER);
  const ts = Date.now() + 2;
  const item = { ...bare(BOOKMAKER, ts), tv: 0, r: [{ rid: 101, st: 'ACTIVE', b: [], l: [], tv: 0 }] };
  t.equal((await ingestOnSocket(svc.url, 'proto', [item])).status, 1);
  for (const c of subs) t.strictSame(imageOf(await frameAt(c, BOOKMAKER, ts)), item, c.format);
});

t.test('frames cut to a depth keep ltp and tv', async (t) => {
  const subs = await subscribers(t, MATCH_ODDS, 1);
  const ts = Date.now() + 3;
  t.equal((await ingestOnSocket(svc.url, 'json', [traded(MATCH_ODDS, ts)])).status, 1);
  for (const c of subs) {
    const f = await frameAt(c, MATCH_ODDS, ts);
    t.strictSame(f.r.map((r) => [r.b.length, r.l.length, r.ltp, r.tv]), [[1, 1, 1.96, 100000.25], [1, 1, 2.04, 52340.25]], c.format);
    t.equal(f.tv, 152340.5, c.format);
  }
});

t.test('bad ltp and tv refuse their item alone, naming the field and what it must be', async (t) => {
  const at = (runner: Obj, market: Obj = {}) => ({ ...bare(MATCH_ODDS, Date.now()), ...market, r: [{ rid: 101, st: 'ACTIVE', b: [], l: [], ...runner }] });
  const cases: [string, Obj, string][] = [
    ['ltp not a number', at({ ltp: '1.5' }), 'r[0].ltp must be a number, the last traded price'],
    ['ltp null', at({ ltp: null }), 'r[0].ltp must be a number, the last traded price'],
    ['ltp below the exchange range', at({ ltp: 1 }), 'r[0].ltp 1 must be decimal odds from 1.01 to 1000 (runner market rule)'],
    ['ltp above the exchange range', at({ ltp: 1000.5 }), 'r[0].ltp 1000.5 must be decimal odds from 1.01 to 1000 (runner market rule)'],
    ['negative runner tv', at({ tv: -1 }), 'r[0].tv must be a traded volume from 0 to 1000000000000'],
    ['runner tv too large', at({ tv: 1e13 }), 'r[0].tv must be a traded volume from 0 to 1000000000000'],
    ['market tv not a number', at({}, { tv: 'lots' }), 'tv must be a traded volume from 0 to 1000000000000'],
    ['negative market tv', at({}, { tv: -0.5 }), 'tv must be a traded volume from 0 to 1000000000000'],
  ];
  for (const [name, item, says] of cases) {
    const ack = await ingestOnSocket(svc.url, 'json', [item]);
    t.same([ack.status, ack.message, ack.refused], [1, 'Ingested 0 items; refused 1', [{ i: 0, mid: MATCH_ODDS, message: `item 0 (odds ${MATCH_ODDS}): ${says}` }]], name);
  }
});

t.test('ltp and tv that only protobuf can carry (NaN, Infinity) are refused', async (t) => {
  for (const [runner, says] of [[{ ltp: NaN }, 'r[0].ltp must be a number'], [{ tv: Infinity }, 'r[0].tv must be a traded volume']] as const) {
    const item = { ...bare(MATCH_ODDS, Date.now()), r: [{ rid: 101, st: 'ACTIVE', b: [], l: [], ...runner }] };
    const ack = await ingestOnSocket(svc.url, 'proto', [item]);
    t.equal(ack.message, 'Ingested 0 items; refused 1');
    t.match(ack.refused, [{ i: 0, mid: MATCH_ODDS, message: `item 0 (odds ${MATCH_ODDS}): ${says}` }], 'the protobuf ack lists the item refused');
  }
});

// Whose odds go out.

t.test('a simulator batch still in flight when an outside image arrives never overwrites it', async (t) => {
  const mid = demoMid(30000011, 1);
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [mid] });
  const from = c.frames.length;
  // The sport item makes the simulator's batch wait on a transaction; the
  // outside batch (odds only) is numbered in the meantime.
  const simulated = svc.ingest.accept(svc.ingest.read([{ kind: 'sport', si: 77, na: 'Curling', a: true }, image(mid, 3)]), { from: 'simulator' });
  const outside = svc.ingest.accept(svc.ingest.read([image(mid, 1.5)]));
  t.match(await Promise.all([simulated, outside]), [{ count: 2 }, { count: 1 }]);
  await c.settled();
  const frames = c.oddsOf(mid).filter((f) => c.frames.indexOf(f) >= from);
  t.same(frames.map((f) => f.r[0].b[0][0]), [1.5], 'only the outside image went out');
});

t.test('the simulator\'s odds go out until another publisher feeds the market, and never after', async (t) => {
  const mid = demoMid(30000014, 1);
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [mid] });
  const from = c.frames.length;
  await svc.ingest.accept(svc.ingest.read([image(mid, 3)]), { from: 'simulator' });
  await svc.ingest.accept(svc.ingest.read([image(mid, 1.5)]));
  await svc.ingest.accept(svc.ingest.read([image(mid, 4)]), { from: 'simulator' });
  await c.settled();
  t.same(c.oddsOf(mid).filter((f) => c.frames.indexOf(f) >= from).map((f) => f.r[0].b[0][0]), [3, 1.5]);
});

t.test('markets leave the set when they leave the read model, nested ones included', async (t) => {
  const feeds = new OutsideFeeds();
  for (const mid of ['p', 'p.1', 'p.2', 'q', 'keep']) feeds.claim(mid);
  const race = (...nested: string[]): Market => ({
    id: 'p', eventId: 1, name: 'Race', sportId: 1, isActive: true, concluded: false, type: 'player-race', recalled: false,
    nested: nested.map((n) => ({ id: n, isActive: true, concluded: false, runners: [], info: null })),
  });
  const q: Market = { id: 'q', eventId: 1, name: 'Q', sportId: 1, isActive: true, concluded: false, type: 'match-odd', recalled: false };
  feeds.forgetGone([
    { kind: 'market', before: race('p.1', 'p.2'), after: race('p.1') },
    { kind: 'market', before: q },
    { kind: 'result', before: { marketId: 'keep', marketType: 'match-odd', outcome: '', recalled: false, abandoned: false } },
  ]);
  t.same(['p', 'p.1', 'p.2', 'q', 'keep'].filter((m) => feeds.has(m)), ['p', 'p.1', 'keep']);
});

// The prices a market can have.

type Reply = { status: number; message: string; refused?: ItemRefusal[] };
const ingest = (...data: Obj[]) => postJson<Reply>(svc.url, '/api/v1/ingest', { data });

const SESSION = '1.200001009';
const NESTED = '1.200001023.1';
const EID = 30000001;

type Ladder = number[][];
const odds = (mid: string, b: Ladder, l: Ladder, extra: Obj = {}): Obj =>
  ({ kind: 'odds', mid, ts: Date.now(), st: 'OPEN', ip: true, r: [{ rid: 101, st: 'ACTIVE', b, l, ...extra }] });
/** A line as the simulator quotes it: Yes a run above No at even rates. */
const line = (mid: string, yes: number, no: number, yesRate = 100, noRate = 100) => odds(mid, [[yes, yesRate]], [[no, noRate]]);

async function refused(t: Test, item: Obj, says: string): Promise<void> {
  const r = await ingest(item);
  t.equal(r.status, 200);
  t.same(r.body, { status: 1, message: 'Ingested 0 items; refused 1', refused: [{ i: 0, mid: item.mid, message: `item 0 (odds ${item.mid}): ${says}` }] });
}

for (const price of [1e308, 0, 5e-324, 1.0, 1001]) {
  t.test(`a back price of ${price} is refused on a runner market`, async (t) => {
    await refused(t, odds(MATCH_ODDS, [[price, 10]], []), `r[0].b[0][0] ${price} must be decimal odds from 1.01 to 1000 (runner market rule)`);
  });
}

t.test('a lay price outside the exchange range is refused', async (t) => {
  await refused(t, odds(MATCH_ODDS, [], [[1.5, 10], [1000.01, 10]]), 'r[0].l[1][0] 1000.01 must be decimal odds from 1.01 to 1000 (runner market rule)');
});

t.test('prices at both ends of the range, and stakes of 0 and the bound, are accepted', async (t) => {
  const r = await ingest(odds(MATCH_ODDS, [[1000, 0]], []), odds(MATCH_ODDS, [], [[1.01, 1e9]]), odds(MATCH_ODDS, [[1.01, 5]], [[1000, 5]], { ltp: 1.01 }));
  t.same(r.body, { status: 1, message: 'Ingested 3 items' });
});

t.test('prices off the exchange ticks are accepted: ticks are not required', async (t) => {
  t.equal((await ingest(odds(MATCH_ODDS, [[1.955, 10]], [[1.957, 10]]))).status, 200);
});

t.test('an unsorted back ladder is refused', async (t) => {
  await refused(t, odds(MATCH_ODDS, [[1.5, 10], [1.9, 10], [1.2, 10]], []), 'r[0].b[1][0] 1.9 after 1.5: back levels must fall strictly from the best (runner market rule)');
});

t.test('an unsorted lay ladder is refused', async (t) => {
  await refused(t, odds(MATCH_ODDS, [], [[1.5, 10], [1.4, 10]]), 'r[0].l[1][0] 1.4 after 1.5: lay levels must rise strictly from the best (runner market rule)');
});

t.test('a price repeated on one side is refused', async (t) => {
  await refused(t, odds(MATCH_ODDS, [[1.5, 10], [1.5, 20]], []), 'r[0].b[1][0] 1.5 after 1.5: back levels must fall strictly from the best (runner market rule)');
});

t.test('a crossed book is refused, best back equal to best lay included', async (t) => {
  await refused(t, odds(MATCH_ODDS, [[2.1, 10]], [[2, 10]]), 'r[0] is crossed, back 2.1 against lay 2: best back must be below best lay (runner market rule)');
  await refused(t, odds(MATCH_ODDS, [[2, 10]], [[2, 10]]), 'r[0] is crossed, back 2 against lay 2: best back must be below best lay (runner market rule)');
});

t.test('a negative stake is refused', async (t) => {
  await refused(t, odds(MATCH_ODDS, [[2, -1]], []), 'r[0].b[0][1] -1 must be a stake from 0 to 1000000000 (runner market rule)');
});

t.test('a stake over the bound is refused', async (t) => {
  await refused(t, odds(MATCH_ODDS, [], [[2, 1e9 + 1]]), 'r[0].l[0][1] 1000000001 must be a stake from 0 to 1000000000 (runner market rule)');
});

t.test('a market nested in a player-race is a runner market', async (t) => {
  await refused(t, line(NESTED, 41, 40), 'r[0] is crossed, back 41 against lay 40: best back must be below best lay (runner market rule)');
});

t.test('line markets quoted as lines are accepted: Yes a run above No, or both at the line with split rates', async (t) => {
  const r = await ingest(line(SESSION, 41, 40), line(SESSION, 40, 40, 90, 110), line(SESSION, 0, 0), odds(SESSION, [[40, 90], [41, 100]], [[40, 110], [39, 100]]));
  t.same(r.body, { status: 1, message: 'Ingested 4 items' });
});

t.test('a line market refuses Yes below No', async (t) => {
  await refused(t, line(SESSION, 39, 40), 'r[0] is crossed, Yes 39 against No 40: best Yes line must be at or above best No line (line market rule)');
});

t.test('a line market refuses a line out of range', async (t) => {
  await refused(t, line(SESSION, 10001, 40), 'r[0].b[0][0] 10001 must be a run line from 0 to 10000 (line market rule)');
  await refused(t, line(SESSION, 41, -1), 'r[0].l[0][0] -1 must be a run line from 0 to 10000 (line market rule)');
});

t.test('a line market refuses a rate out of range', async (t) => {
  await refused(t, line(SESSION, 41, 40, 0), 'r[0].b[0][1] 0 must be a rate from 1 to 1000 (line market rule)');
  await refused(t, line(SESSION, 41, 40, 100, 1001), 'r[0].l[0][1] 1001 must be a rate from 1 to 1000 (line market rule)');
});

t.test('a line market refuses Yes lines that fall or No lines that rise', async (t) => {
  await refused(t, odds(SESSION, [[41, 100], [40, 100]], []), 'r[0].b[1][0] 40 after 41: Yes levels must rise strictly from the best (line market rule)');
  await refused(t, odds(SESSION, [], [[40, 100], [41, 100]]), 'r[0].l[1][0] 41 after 40: No levels must fall strictly from the best (line market rule)');
});

t.test('a market created earlier in the batch is judged by the type that batch gives it', async (t) => {
  const created = { kind: 'market', mid: '1.7771', eid: EID, na: 'Total Runs', ty: 'line-market', s: true, go: false, rt: false };
  t.equal((await ingest(created, line('1.7771', 301, 300))).status, 200, 'a line on a new line market');
  const asRunners = { ...created, mid: '1.7772', na: 'Winner', ty: 'winner-market', r: [{ rid: 101, na: 'A' }] };
  const r = await ingest(asRunners, line('1.7772', 301, 300));
  t.same(r.body.refused, [{ i: 1, mid: '1.7772', message: 'item 1 (odds 1.7772): r[0] is crossed, back 301 against lay 300: best back must be below best lay (runner market rule)' }]);
});

t.test('a market known only to Postgres is judged by the type stored there', async (t) => {
  const c = await sqlClient(t, svc.databaseUrl);
  // Written with triggers off: no NOTIFY, so the read model never hears of them.
  await c.query('SET session_replication_role = replica');
  await c.query(`INSERT INTO markets (mid, eid, na, ty) VALUES ('1.8881', $1, 'Hidden Session', 'session'), ('1.8882', $1, 'Hidden Odds', 'match-odd')`, [EID]);
  t.equal((await ingest(line('1.8881', 51, 50))).status, 200, 'a line on a hidden session');
  await refused(t, line('1.8882', 51, 50), 'r[0] is crossed, back 51 against lay 50: best back must be below best lay (runner market rule)');
});

t.test('one bad image is refused alone: the batch\'s other images are published, and its market is unreliable until its next image', async (t) => {
  // Good images first: the refusals of the tests above left both markets unreliable.
  t.same((await ingest(odds(MATCH_ODDS, [[1.8, 10]], [[1.9, 10]]), line(SESSION, 41, 40))).body, { status: 1, message: 'Ingested 2 items' });
  const sub = await Client.connect(svc.url);
  t.teardown(() => sub.close());
  await sub.request({ op: 'subscribe', mids: [MATCH_ODDS, SESSION] });
  const before = (await sub.next((f) => f.op === 'odds' && f.mid === MATCH_ODDS && f.r[0].b[0]?.[0] === 1.8)) as OddsMessage;
  await sub.settled();
  t.notOk(sub.frames.some((f) => f.op === 'freshness'), 'both markets live');
  const from = sub.frames.length;
  const r = await ingest(odds(MATCH_ODDS, [[1.7, 10]], [[1.75, 10]]), odds(MATCH_ODDS, [[5e-324, 10]], []), line(SESSION, 45, 44));
  t.same(r.body, {
    status: 1, message: 'Ingested 2 items; refused 1',
    refused: [{ i: 1, mid: MATCH_ODDS, message: 'item 1 (odds 1.200001001): r[0].b[0][0] 5e-324 must be decimal odds from 1.01 to 1000 (runner market rule)' }],
  });
  const published = (await sub.next((f) => f.op === 'odds' && f.mid === MATCH_ODDS && f.r[0].b[0]?.[0] === 1.7, 5000, from)) as OddsMessage;
  t.equal(published.seq, before.seq + 1, 'the good image of the same market, before the bad one, was published');
  await sub.next((f) => f.op === 'odds' && f.mid === SESSION && f.r[0].b[0]?.[0] === 45, 5000, from);
  const stale = await sub.next((f) => f.op === 'freshness' && f.mid === MATCH_ODDS, 5000, from);
  t.match(stale, { op: 'freshness', mid: MATCH_ODDS, live: false, why: 'unreliable' }, 'its market is told unreliable');
  t.ok(sub.frames.indexOf(stale) > sub.frames.indexOf(published), 'after the image it no longer vouches for');

  // A subscriber arriving now is told the market is unreliable, then gets its image.
  const late = await Client.connect(svc.url);
  t.teardown(() => late.close());
  await late.request({ op: 'subscribe', mids: [MATCH_ODDS, SESSION] });
  await late.settled();
  t.same(late.frames.filter((f) => f.op !== 'ack').map((f) => [f.op, (f as { mid: string }).mid]),
    [['freshness', MATCH_ODDS], ['odds', MATCH_ODDS], ['market', MATCH_ODDS], ['odds', SESSION], ['market', SESSION]],
    'freshness, then the image, for the stale market only; each market\'s terms after its image');

  t.equal((await ingest(odds(MATCH_ODDS, [[1.6, 10]], [[1.65, 10]]))).status, 200);
  const after = (await sub.next((f) => f.op === 'odds' && f.mid === MATCH_ODDS && f.r[0].b[0]?.[0] === 1.6, 5000, from)) as OddsMessage;
  t.equal(after.seq, before.seq + 2, 'the next frame follows the published one');
  const live = await sub.next((f) => f.op === 'freshness' && f.mid === MATCH_ODDS && f.live, 5000, sub.frames.indexOf(stale) + 1);
  t.ok(sub.frames.indexOf(live) > sub.frames.indexOf(after), 'live again with its next image');
  t.notOk(sub.frames.slice(from).some((f) => f.op === 'freshness' && f.mid === SESSION), 'the batch\'s other market was never stale');
  t.notOk(sub.oddsOf(MATCH_ODDS).some((f) => f.r[0].b[0]?.[0] === 5e-324), 'the bad image never arrived');
});

t.test('a line type that lists runners of its own (an exchange\'s odd-or-even market) is priced by decimal odds', async (t) => {
  const market = { kind: 'market', mid: '1.299000001', eid: EID, na: 'Odd or Even', si: 4, s: true, go: false, ty: 'odd-even', rt: false, r: [{ rid: 101, na: 'Odd' }, { rid: 102, na: 'Even' }] };
  t.same((await ingest(market, odds('1.299000001', [[1.95, 10], [1.9, 20]], [[2.02, 10]]))).body, { status: 1, message: 'Ingested 2 items' }, 'odds accepted in the batch that lists it');
  t.same((await ingest(odds('1.299000001', [[1.96, 10]], [[2.0, 10]]))).body, { status: 1, message: 'Ingested 1 item' }, 'and once the read model holds it');
  await refused(t, odds('1.299000001', [[1001, 100]], []), 'r[0].b[0][0] 1001 must be decimal odds from 1.01 to 1000 (runner market rule)');
});
