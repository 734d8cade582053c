/**
 * The terms of a bet, from a publisher to every screen, over real sockets and Postgres: `terms`
 * items reach each subscriber of the market as `market` frames (JSON and protobuf) and a new
 * subscriber after its image; partial items change only what they carry; a result's settlement
 * (certainty, dead heats, voids, rollbacks) reaches `result` frames; REST keeps exactly the
 * interface's keys and the terms route answers the rest.
 */
import t from 'tap';
import { http, postJson, startTestService } from '../helpers/service.js';
import { eventually } from '../helpers/wait.js';
import { Client, image, ingestOnSocket } from '../helpers/ws.js';
import type { MarketStateMessage, ResultMessage, ServerMessage } from '../../src/odds/messages.js';

type Obj = Record<string, unknown>;
const svc = await startTestService(t, { DEMO_DATA: 'off' });
const ingest = (...data: Obj[]) => postJson<{ status: number; message: string }>(svc.url, '/api/v1/ingest', { data });
const termsOf = (mids: string) => http<Obj[]>(svc.url, `/api/v1/markets/terms?mid=${mids}`);

const MID = '7.900001';
const RACE = [
  { kind: 'sport', si: 7, na: 'Horse Racing', a: true },
  { kind: 'league', li: 7001, si: 7, na: 'Ascot' },
  { kind: 'event', eid: 900001, na: '14:30 Ascot', st: '2030-06-01T14:30:00.000Z', go: false, ip: false, si: 7, li: 7001, tv: null },
  { kind: 'market', mid: MID, eid: 900001, na: 'To Be Placed', ty: 'other-market', s: true, go: false, rt: false, r: [1, 2, 3, 4, 5].map((rid) => ({ rid, na: `Horse ${rid}` })) },
];
const TERMS = {
  bd: 0, tip: true, sus: Date.parse('2030-06-01T14:30:00Z'), bt: 'ODDS', nw: 3, ewd: 4, bsp: true, cc: 'GB', ven: 'Ascot', race: 'Flat', mbr: 5,
  reg: ['GBR'], r: [{ rid: 1, st: 'ACTIVE', af: 26.3 }, { rid: 2, st: 'ACTIVE', af: 21.7 }, { rid: 3, st: 'ACTIVE', af: 13.6, hc: 0 }],
};

const marketFrames = (c: Client, from = 0) => c.frames.slice(from).filter((f): f is MarketStateMessage => f.op === 'market' && f.mid === MID);
const lastTerms = async (c: Client, from: number, ok: (m: MarketStateMessage) => boolean) =>
  (await c.next((f) => f.op === 'market' && f.mid === MID && ok(f), 5000, from)) as MarketStateMessage;

t.before(async () => {
  t.equal((await ingest(...RACE, image(MID, 3, [1, 2, 3, 4, 5]))).status, 200);
});

t.test('a terms item reaches every subscriber, JSON and protobuf, as a market frame with the terms as sent', async (t) => {
  const json = await Client.connect(svc.url, { format: 'json' });
  const proto = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => { json.close(); proto.close(); });
  for (const c of [json, proto]) await c.request({ op: 'subscribe', mids: [MID] });
  const r = await ingest({ kind: 'terms', mid: MID, ...TERMS });
  t.same(r.body, { status: 1, message: 'Ingested 1 item' });
  const { kind: _k, mid: _m, ...expected } = { kind: 'terms', mid: MID, ...TERMS };
  for (const c of [json, proto]) {
    const f = await lastTerms(c, 0, (m) => m.terms !== undefined);
    t.same(f, { op: 'market', mid: MID, s: true, go: false, rt: false, terms: expected }, `${c.format}: the terms as sent, key for key`);
  }
  const rest = await http<Obj>(svc.url, '/api/v1/events/markets?eid=900001');
  t.same(Object.keys((rest.body as { data: Record<string, Obj[]> }).data['900001'][0]), ['mid', 'eid', 'na', 'si', 's', 'go', 'ty', 'rt', 'r'], 'REST keeps exactly the interface\'s keys');
  t.same((await termsOf(`${MID},no.such`)).body, [{ mid: MID, terms: expected }], 'the terms route has them; an unknown market is left out');
});

t.test('a new subscriber gets the market\'s terms right after its image', async (t) => {
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [MID] });
  await c.settled();
  const ops = c.frames.filter((f) => 'mid' in f && f.mid === MID).map((f) => f.op);
  t.same(ops, ['odds', 'market'], 'the image, then the terms');
  t.equal(marketFrames(c)[0].terms?.nw, 3);
});

t.test('a partial item changes only what it carries: the bet delay as it turns in play, a runner removed with its factor and time, null clears', async (t) => {
  const c = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [MID] });
  await c.settled();
  const from = c.frames.length;
  const removedAt = Date.parse('2030-06-01T13:55:12.000Z');
  await ingest({ kind: 'terms', mid: MID, bd: 5, sus: null, r: [{ rid: 3, st: 'REMOVED', rd: removedAt }, { rid: 1, af: 30.1 }] });
  const f = await lastTerms(c, from, (m) => m.terms?.bd === 5);
  t.equal(f.terms!.sus, undefined, 'cleared');
  t.same(f.terms!.r, [{ rid: 1, st: 'ACTIVE', af: 30.1 }, { rid: 2, st: 'ACTIVE', af: 21.7 }, { rid: 3, st: 'REMOVED', af: 13.6, rd: removedAt, hc: 0 }],
    'runner 3 removed with its factor kept and its time; runner 1\'s factor moved; runner 2 as it was');
  t.equal(f.terms!.nw, 3, 'the rest as it was');
  const rest = await eventually(() => termsOf(MID), (r) => (r.body[0]?.terms as Obj)?.bd === 5);
  t.same((rest.body[0].terms as { r: unknown }).r, f.terms!.r);
});

t.test('bad terms are refused naming the field, and nothing changes', async (t) => {
  const before = (await termsOf(MID)).body;
  for (const [item, why] of [
    [{ bd: -1 }, /item 0 \(terms 7\.900001\): bd must be a bet delay/],
    [{ nw: 0 }, /nw must be a number of winners/],
    [{ cc: 'gb' }, /cc must be an ISO 3166 country code/],
    [{ bt: 'SPREAD' }, /bt must be one of ODDS, LINE/],
    [{ lmin: 10, lmax: 5 }, /lmax must be at least lmin/],
    [{ r: [{ rid: 9, st: 'REMOVED' }] }, /r\[0\]\.rid 9 is not a runner of market 7\.900001/],
    [{ r: [{ rid: 1, st: 'GONE' }] }, /r\[0\]\.st must be one of ACTIVE, REMOVED/],
    [{ r: [{ rid: 1, af: 101 }] }, /r\[0\]\.af must be an adjustment factor percentage from 0 to 100/],
  ] as const) {
    const r = await ingest({ kind: 'terms', mid: MID, ...item });
    t.equal(r.status, 400, JSON.stringify(item));
    t.match(r.body.message, why);
  }
  t.match((await ingest({ kind: 'terms', mid: 'no.such', bd: 1 })).body.message, /market no\.such does not exist/);
  t.same((await termsOf(MID)).body, before, 'unchanged');
});

t.test('settlement: dead heats, a removed runner void, provisional then confirmed, then rolled back; REST keeps mid, mt, res, rt, ia', async (t) => {
  const c = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [MID] });
  await c.settled();
  const results = (from: number) => c.frames.slice(from).filter((f): f is ResultMessage => f.op === 'result');
  const from = c.frames.length;
  const rs = [
    { rid: 1, st: 'WINNER' }, { rid: 2, st: 'WINNER', dh: 0.5 }, { rid: 4, st: 'WINNER', dh: 0.5 }, { rid: 5, st: 'LOSER' }, { rid: 3, st: 'REMOVED', vf: 1 },
  ];
  const at = Date.parse('2030-06-01T14:36:40.000Z');
  await ingest({ kind: 'result', mid: MID, res: '1,2,4', rt: false, ia: false, cert: 'provisional', at, rs });
  await c.next((f) => f.op === 'result' && f.cert === 'provisional', 5000, from);
  await ingest({ kind: 'result', mid: MID, cert: 'confirmed' });
  await c.next((f) => f.op === 'result' && f.cert === 'confirmed', 5000, from);
  await ingest({ kind: 'result', mid: MID, rt: true });
  await c.next((f) => f.op === 'result' && f.rt, 5000, from);
  const base = { op: 'result', mid: MID, mt: 'other-market', res: '1,2,4', ia: false, at, rs };
  t.same(results(from), [
    { ...base, rt: false, cert: 'provisional' },
    { ...base, rt: false, cert: 'confirmed' },
    { ...base, rt: true, cert: 'confirmed' },
  ], 'each change a frame: a certainty alone is a change, a rollback is rt');
  const rest = await http<Obj[]>(svc.url, `/api/v1/markets/result?mid=${MID}`);
  t.same(rest.body, [{ mid: MID, mt: 'other-market', res: '1,2,4', rt: true, ia: false }], 'REST: exactly the interface\'s keys');
  t.same((await termsOf(MID)).body[0].settlement, { cert: 'confirmed', at, rs }, 'the terms route has the settlement');
});

t.test('a void market, then the void rolled back, in protobuf ingest', async (t) => {
  const mid = '7.900002';
  await ingest({ kind: 'market', mid, eid: 900001, na: 'Win', ty: 'winner-market', s: true, go: false, rt: false, r: [{ rid: 1, na: 'A' }, { rid: 2, na: 'B' }] });
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [mid] });
  const ack = await ingestOnSocket(svc.url, 'proto', [
    { kind: 'terms', mid, bd: 0, tip: false, nw: 1, r: [{ rid: 1, st: 'ACTIVE', af: 55.5 }, { rid: 2, st: 'HIDDEN' }] },
    { kind: 'result', mid, res: 'Abandoned', rt: false, ia: true, cert: 'confirmed', rs: [{ rid: 1, st: 'LOSER', vf: 1 }, { rid: 2, st: 'LOSER', vf: 1 }] },
  ]);
  t.equal(ack.status, 1, ack.message);
  const terms = (await c.next((f) => f.op === 'market' && f.terms !== undefined)) as MarketStateMessage;
  t.same(terms.terms, { bd: 0, tip: false, nw: 1, r: [{ rid: 1, st: 'ACTIVE', af: 55.5 }, { rid: 2, st: 'HIDDEN' }] });
  const voided = (await c.next((f) => f.op === 'result')) as ServerMessage;
  t.same(voided, { op: 'result', mid, mt: 'winner-market', res: 'Abandoned', rt: false, ia: true, cert: 'confirmed', rs: [{ rid: 1, st: 'LOSER', vf: 1 }, { rid: 2, st: 'LOSER', vf: 1 }] });
  const from = c.frames.length;
  await ingestOnSocket(svc.url, 'proto', [{ kind: 'result', mid, rt: true, ia: false, res: '', cert: null, rs: null }]);
  t.same(await c.next((f) => f.op === 'result', 5000, from), { op: 'result', mid, mt: 'winner-market', res: '', rt: true, ia: false }, 'the void rolled back: cleared in protobuf too');
});
