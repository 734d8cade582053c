/**
 * Suspensions with a reason, over real sockets: an odds image says why its market is suspended
 * or its ball running (`sr`), and every subscriber is told so, in images and deltas, JSON and
 * protobuf; a `suspend` item stops a whole event's markets at once (or a group of their types),
 * each with the reason; the client says it when asked whether a bet can be taken.
 */
import t from 'tap';
import { postJson, startTestService } from '../helpers/service.js';
import { Client, image, ingestOnSocket } from '../helpers/ws.js';
import type { OddsMessage } from '../../src/odds/messages.js';
import { next, startClient, wsUrl } from '../client/helpers.js';

type Obj = Record<string, unknown>;
const svc = await startTestService(t, { DEMO_DATA: 'off' });
const ingest = (...data: Obj[]) => postJson<{ status: number; message: string; refused?: { i: number; message: string }[] }>(svc.url, '/api/v1/ingest', { data });

const EVENT = 100001;
const runners = [{ rid: 1, na: 'Home' }, { rid: 2, na: 'Away' }];
const MARKETS = { odds: '1.1001', goals: '1.1002', corners: '1.1003', done: '1.1004' };
t.equal((await ingest(
  { kind: 'sport', si: 1, na: 'Soccer', a: true }, { kind: 'league', li: 101, si: 1, na: 'League' },
  { kind: 'event', eid: EVENT, na: 'Home v Away', st: '2030-06-01T14:30:00.000Z', si: 1, li: 101, ip: true },
  { kind: 'market', mid: MARKETS.odds, eid: EVENT, na: 'Match Odds', ty: 'match-odd', r: runners },
  { kind: 'market', mid: MARKETS.goals, eid: EVENT, na: 'Over/Under 2.5 Goals', ty: 'goals', r: runners },
  { kind: 'market', mid: MARKETS.corners, eid: EVENT, na: 'Corners', ty: 'match-odd', r: runners },
  { kind: 'market', mid: MARKETS.done, eid: EVENT, na: 'First Goal', ty: 'match-odd', r: runners },
  image(MARKETS.odds), image(MARKETS.goals), image(MARKETS.corners), { ...image(MARKETS.done), st: 'CLOSED' },
)).status, 200);

const last = (c: Client, mid: string) => c.oddsOf(mid).at(-1);

t.test('an image\'s reason reaches every subscriber, in images and in deltas, JSON and protobuf', async (t) => {
  const subs = [await Client.connect(svc.url, { format: 'json' }), await Client.connect(svc.url, { format: 'proto' })];
  const deltas = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => [...subs, deltas].forEach((c) => c.close()));
  for (const c of subs) await c.request({ op: 'subscribe', mids: [MARKETS.odds] });
  await deltas.request({ op: 'subscribe', mids: [MARKETS.odds], delta: true });
  const held = (await deltas.next((f) => f.op === 'odds')) as OddsMessage;
  const ack = await ingestOnSocket(svc.url, 'proto', [{ ...image(MARKETS.odds), st: 'SUSPENDED', sr: 'VAR' }]);
  t.equal(ack.status, 1, ack.message);
  for (const c of subs) t.match(await c.next((f) => f.op === 'odds' && f.st === 'SUSPENDED'), { st: 'SUSPENDED', sr: 'VAR' }, `${c.format}: suspended, VAR`);
  t.match(await deltas.next((f) => f.op === 'delta' && f.seq === held.seq + 1), { op: 'delta', st: 'SUSPENDED', sr: 'VAR' }, 'a delta carries the reason');
  await ingest({ ...image(MARKETS.odds), st: 'BALL_RUNNING', sr: 'ball running' });
  await ingest(image(MARKETS.odds));
  for (const c of subs) {
    const open = (await c.next((f) => f.op === 'odds' && f.st === 'OPEN' && f.seq > held.seq)) as OddsMessage;
    t.equal(open.sr, undefined, `${c.format}: open again, no reason`);
    t.same(c.oddsOf(MARKETS.odds).slice(-3).map((f) => [f.st, f.sr]), [['SUSPENDED', 'VAR'], ['BALL_RUNNING', 'ball running'], ['OPEN', undefined]]);
  }
  const reopened = (await deltas.next((f) => f.op === 'delta' && f.st === 'OPEN')) as unknown as Obj;
  t.notOk('sr' in reopened, 'a delta to an open image has none: the state comes whole');
});

t.test('a reason only on a suspended market, of words the service can keep: refused alone otherwise', async (t) => {
  const r = await ingest({ ...image(MARKETS.goals), sr: 'goal' }, { ...image(MARKETS.goals), st: 'SUSPENDED', sr: '' }, { ...image(MARKETS.goals), st: 'SUSPENDED', sr: 'x'.repeat(51) });
  t.same(r.body.refused?.map((x) => x.message), [
    'item 0 (odds 1.1002): sr is only for a market that is SUSPENDED or BALL_RUNNING',
    'item 1 (odds 1.1002): sr must be a reason of 1 to 50 characters (no NUL, no lone surrogate)',
    'item 2 (odds 1.1002): sr must be a reason of 1 to 50 characters (no NUL, no lone surrogate)',
  ]);
});

for (const format of ['json', 'proto'] as const) {
  t.test(`${format} ingest: a suspend item stops every trading market of the event at once, with the reason; a group by type; an unknown event refused alone`, async (t) => {
    await ingest(image(MARKETS.odds, 2.1), image(MARKETS.goals, 2.2), image(MARKETS.corners, 2.3));
    const c = await Client.connect(svc.url, { format });
    t.teardown(() => c.close());
    await c.request({ op: 'subscribe', eids: [EVENT] });
    await c.settled();
    const from = c.frames.length;
    const ts = Date.now();
    const ack = await ingestOnSocket(svc.url, format, [{ kind: 'suspend', eid: EVENT, sr: 'goal', ts }, { kind: 'suspend', eid: 999, sr: 'goal', ts }]);
    t.match(ack, { status: 1, message: 'Ingested 1 item; refused 1', refused: [{ i: 1, mid: '', message: 'item 1 (suspend 999): event 999 is not known' }] });
    await c.settled();
    const stopped = c.frames.slice(from).filter((f): f is OddsMessage => f.op === 'odds');
    t.same(stopped.map((f) => [f.mid, f.st, f.sr, f.ts]).sort(), [
      [MARKETS.odds, 'SUSPENDED', 'goal', ts], [MARKETS.goals, 'SUSPENDED', 'goal', ts], [MARKETS.corners, 'SUSPENDED', 'goal', ts],
    ].sort(), 'each trading market once, the closed one left alone');
    t.same(stopped.find((f) => f.mid === MARKETS.goals)!.r[0].b[0][0], 2.2, 'its prices shown, not taken');
    await ingest(image(MARKETS.odds, 2.1), image(MARKETS.goals, 2.2), image(MARKETS.corners, 2.3));
    const group = c.frames.length;
    await ingestOnSocket(svc.url, format, [{ kind: 'suspend', eid: EVENT, sr: 'penalty', ts, tys: ['goals'] }]);
    await c.settled();
    t.same(c.frames.slice(group).filter((f): f is OddsMessage => f.op === 'odds' && f.st === 'SUSPENDED').map((f) => [f.mid, f.sr]), [[MARKETS.goals, 'penalty']], 'a group: the goal markets alone');
    t.match(last(c, MARKETS.odds), { st: 'OPEN' });
  });
}

t.test('a suspend item that names a market as well as its event is refused alone, its refusal naming that market, and nothing is stopped', async (t) => {
  await ingest(image(MARKETS.odds, 2.1), image(MARKETS.goals, 2.2), image(MARKETS.corners, 2.3));
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', eids: [EVENT] });
  await c.settled();
  const from = c.frames.length;
  const r = await ingest({ kind: 'suspend', eid: EVENT, mid: MARKETS.goals, sr: 'goal', ts: Date.now() });
  t.same(r.body.refused, [{
    i: 0, mid: MARKETS.goals,
    message: `item 0 (suspend ${EVENT}): mid has no place on a suspend item, which stops every market of its event (eid): to suspend one market, send its odds image with st SUSPENDED`,
  }]);
  await c.settled();
  t.same(c.frames.slice(from).filter((f) => f.op === 'odds' && (f as OddsMessage).st === 'SUSPENDED'), [], 'no market of the event suspended');
});

// A suspend item is a few bytes that publish an image for each market of its event: 100 of them on
// an event of 2,000 markets (6 KB) published 200,000 images and held the event loop 3 s; 5,000 of
// them, within every bound a batch has, would have made 10 million.
t.test('a batch\'s suspend items publish at most INGEST_MAX_ITEMS images in all: one past them is refused alone', async (t) => {
  await ingest(image(MARKETS.odds, 2.1), image(MARKETS.goals, 2.2), image(MARKETS.corners, 2.3));
  const c = await Client.connect(svc.url, { format: 'json' });
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [MARKETS.odds] });
  await c.settled();
  const from = c.oddsOf(MARKETS.odds).length;
  // Three trading markets each: 1,666 of them are 4,998 images; the next would pass 5,000.
  const stops = Array.from({ length: 1668 }, (_, k) => ({ kind: 'suspend', eid: EVENT, sr: `stop ${k}`, ts: Date.now() }));
  const ack = await ingestOnSocket(svc.url, 'json', stops);
  t.match(ack, { status: 1, message: 'Ingested 1666 items; refused 2' });
  t.same(ack.refused?.map((r) => r.i), [1666, 1667]);
  t.equal(ack.refused?.[0].message, 'item 1666 (suspend 100001): it would suspend more markets than the 2 of the 5000 images a batch\'s suspend items may publish in all that are left (INGEST_MAX_ITEMS)');
  await c.settled();
  const stopped = c.oddsOf(MARKETS.odds).slice(from);
  t.equal(stopped.length, 1666, 'the market suspended once for each item taken');
  t.match(stopped.at(-1), { st: 'SUSPENDED', sr: 'stop 1665' });
  await ingest(image(MARKETS.odds, 2.1), image(MARKETS.goals, 2.2), image(MARKETS.corners, 2.3));
});

t.test('the client: can I take this bet? no, and why: the market suspended for a goal', async (t) => {
  await ingest(image(MARKETS.odds, 2.1));
  const { client } = startClient(t, { url: wsUrl(svc.url), format: 'proto' });
  await client.subscribe({ mids: [MARKETS.odds] });
  t.ok(client.canTake(MARKETS.odds, 1, 'back').ok);
  const stopped = next(client, 'odds', (f) => f.st === 'SUSPENDED');
  await ingest({ kind: 'suspend', eid: EVENT, sr: 'goal', ts: Date.now() });
  await stopped;
  t.match(client.canTake(MARKETS.odds, 1, 'back'), { ok: false, why: ['market SUSPENDED (goal)'], market: { status: 'SUSPENDED', suspendReason: 'goal' } });
});
