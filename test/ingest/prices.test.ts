/**
 * The prices a market can have, enforced at ingest: runner markets by decimal odds, line
 * markets by run lines and rates. A refusal names the item and the rule; the image is refused
 * alone, its market is unreliable until its next image, and the batch's other images are published.
 */
import t, { type Test } from 'tap';
import { postJson, startTestService } from '../helpers/service.js';
import { sqlClient } from '../helpers/db.js';
import { Client } from '../helpers/ws.js';
import type { ItemRefusal, OddsMessage } from '../../src/odds/messages.js';

type Obj = Record<string, unknown>;
type Reply = { status: number; message: string; refused?: ItemRefusal[] };
const svc = await startTestService(t);
const ingest = (...data: Obj[]) => postJson<Reply>(svc.url, '/api/v1/ingest', { data });

const MATCH_ODDS = '1.200001001';
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

  // A subscriber arriving now gets the market's image, and then that it is unreliable.
  const late = await Client.connect(svc.url);
  t.teardown(() => late.close());
  await late.request({ op: 'subscribe', mids: [MATCH_ODDS, SESSION] });
  await late.settled();
  t.same(late.frames.filter((f) => f.op !== 'ack').map((f) => [f.op, (f as { mid: string }).mid]), [['odds', MATCH_ODDS], ['freshness', MATCH_ODDS], ['odds', SESSION]],
    'image, then freshness for the stale market only');

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
