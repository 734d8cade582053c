/**
 * The record answers what a subscriber held: a market's life is published (images, a suspension
 * for a goal, one by its state, a stale spell, a result) while a real subscriber watches; after
 * each change, once the subscriber has it, the instant is noted. The price route asked at each of those instants,
 * between changes, answers exactly the image, state, result and freshness the subscriber held.
 */
import t from 'tap';
import { http, postJson, startTestService, type Reply } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { waitFor } from '../helpers/wait.js';
import { scrape, value } from '../helpers/metrics.js';
import type { OddsMessage, ServerMessage } from '../../src/odds/messages.js';
import { loadChecker } from '../docs/schema.js';

type Obj = Record<string, unknown>;
const api = await loadChecker();
const svc = await startTestService(t, { RECORD: 'on' });
// The life is published once this pod records: before it takes the recorder's lease, the state
// frames it publishes are not recorded (another pod may be recording them), and what it records on
// taking the lease is where every market stands then, not the life that led there.
await waitFor(async () => value(await scrape(svc.url), 'odds_record_leader') === 1, 'the service took the recorder\'s lease');
const ingest = (...data: Obj[]) => postJson<{ status: number }>(svc.url, '/api/v1/ingest', { data });

const MID = '5.56000001';
await ingest(
  { kind: 'sport', si: 56, na: 'Snooker', a: true },
  { kind: 'league', li: 5601, si: 56, na: 'World Snooker' },
  { kind: 'event', eid: 56000001, na: 'Allen v Bingham', st: '2030-01-01T19:00:00.000Z', go: false, ip: false, si: 56, li: 5601, tv: null },
  { kind: 'market', mid: MID, eid: 56000001, na: 'Match Odds', ty: 'match-odd', s: true, go: false, rt: false, r: [{ rid: 1, na: 'Allen' }, { rid: 2, na: 'Bingham' }] },
);

/** What a subscriber holds of the market: its newest frame of each kind. */
interface Held {
  odds: Obj | null;
  market: Obj | null;
  result: Obj | null;
  freshness: Obj | null;
}

/** The market's state as it was created, before any subscriber: what REST shows, and the record holds from then. */
const CREATED = { op: 'market', mid: MID, s: true, go: false, rt: false };

function held(frames: readonly ServerMessage[]): Held {
  const out: Held = { odds: null, market: CREATED, result: null, freshness: null };
  for (const f of frames) {
    if (f.op === 'odds') {
      const { op: _op, con: _con, cf: _cf, ...rest } = f as OddsMessage;
      out.odds = rest;
    } else if (f.op === 'market' || f.op === 'result' || f.op === 'freshness') out[f.op] = f as unknown as Obj;
  }
  return out;
}

t.test('the price route at instants between changes answers what a subscriber held then', async (t) => {
  const sub = await Client.connect(svc.url);
  t.teardown(() => sub.close());
  await sub.request({ op: 'subscribe', mids: [MID] });
  const steps: { name: string; items: Obj[]; seen: (f: ServerMessage) => boolean }[] = [
    { name: 'first image', items: [image(MID, 2)], seen: (f) => f.op === 'odds' && f.r[0].b[0][0] === 2 },
    { name: 'a move', items: [image(MID, 2.5)], seen: (f) => f.op === 'odds' && f.r[0].b[0][0] === 2.5 },
    { name: 'suspended for a goal', items: [{ ...image(MID, 2.5), st: 'SUSPENDED', sr: 'goal' }], seen: (f) => f.op === 'odds' && f.sr === 'goal' },
    { name: 'open again', items: [image(MID, 2.5)], seen: (f) => f.op === 'odds' && f.st === 'OPEN' },
    { name: 'suspended', items: [{ kind: 'market', mid: MID, s: false }], seen: (f) => f.op === 'market' && !f.s },
    { name: 'stale (late)', items: [{ kind: 'stale', mid: MID, why: 'late' }], seen: (f) => f.op === 'freshness' && !f.live },
    { name: 'a move while stale', items: [{ ...image(MID, 3), st: 'SUSPENDED' }], seen: (f) => f.op === 'odds' && f.r[0].b[0][0] === 3 },
    { name: 'live again', items: [{ kind: 'market', mid: MID, s: true }, image(MID, 3.5)], seen: (f) => f.op === 'odds' && f.r[0].b[0][0] === 3.5 },
    { name: 'settled', items: [{ kind: 'result', mid: MID, res: '1', rt: false, ia: false }], seen: (f) => f.op === 'result' },
  ];
  const instants: { name: string; at: number; held: Held }[] = [];
  /** Notes the instant; the next change is published in a later ms (the record's times are ms). */
  const note = async (name: string, h: Held) => {
    const at = Date.now();
    instants.push({ name, at, held: h });
    while (Date.now() <= at) await new Promise((ok) => setImmediate(ok));
  };
  await note('before anything', held([]));
  for (const step of steps) {
    const from = sub.frames.length;
    t.equal((await ingest(...step.items)).body.status, 1, `${step.name}: ingested`);
    await sub.next(step.seen, 10_000, from);
    // A ping's ack: every frame the server sent before it is here too.
    await sub.request({ op: 'ping' });
    await note(`after ${step.name}`, held(sub.frames));
  }
  t.ok(instants.at(-1)!.held.freshness, 'the subscriber was told of the stale spell');

  // The record catches up: every image and state frame is there, the settlement published last.
  const changes = () => http<{ changes: Obj[] }>(svc.url, `/api/v1/record/changes?mid=${MID}&from=${instants[0].at}&limit=1000`);
  let last: Reply<{ changes: Obj[] }> | undefined;
  await waitFor(async () => ((last = await changes()).body.changes ?? []).some((c) => c.kind === 'result'), () => `the record of ${MID}: ${last?.text.slice(0, 400)}`);
  api.check(t, 'GET', '/api/v1/record/changes', last!);
  const paged = await http<{ changes: Obj[]; next: string }>(svc.url, `/api/v1/record/changes?mid=${MID}&from=${instants[0].at}&limit=3`);
  const rest = await http<{ changes: Obj[] }>(svc.url, `/api/v1/record/changes?mid=${MID}&from=${instants[0].at}&limit=1000&after=${paged.body.next}`);
  t.same([...paged.body.changes, ...rest.body.changes], last!.body.changes, 'a page and the pages after it are the whole range');

  for (const i of instants) {
    const r = await http<Obj>(svc.url, `/api/v1/record/price?mid=${MID}&at=${i.at}`);
    t.equal(r.status, 200, i.name);
    api.check(t, 'GET', '/api/v1/record/price', r);
    t.same({ odds: r.body.odds, market: (r.body.market as Obj | null)?.frame ?? null, result: (r.body.result as Obj | null)?.frame ?? null, freshness: (r.body.freshness as Obj | null)?.frame ?? null }, i.held, i.name);
  }
});

t.test('price and changes refuse bad input with a reason', async (t) => {
  const cases: [string, RegExp][] = [
    ['/api/v1/record/price?at=1', /mid/],
    ['/api/v1/record/price?mid=1.1', /at is required/],
    ['/api/v1/record/price?mid=1.1&at=yesterday', /at must be a time/],
    ['/api/v1/record/changes?mid=1.1&from=10&to=5', /to must not be before from/],
    [`/api/v1/record/changes?mid=1.1&from=${Date.now() - 1000}&limit=0`, /limit/],
    ['/api/v1/record/changes?mid=1.1&from=1', /within ten years/],
  ];
  for (const [path, says] of cases) {
    const r = await http<{ status: number; message: string }>(svc.url, path);
    t.equal(r.status, 400, path);
    api.check(t, 'GET', path.split('?')[0], r);
    t.match(r.body.message, says, path);
  }
});
