/**
 * What was last traded and how much, through the whole path: a publisher sends `ltp` and `tv`
 * on an odds item in either format, and subscribers in either format receive exactly those
 * values, or no such keys when the publisher sent none.
 */
import t, { type Test } from 'tap';
import { startTestService } from '../helpers/service.js';
import { Client, ingestOnSocket, type Format } from '../helpers/ws.js';
import type { OddsMessage } from '../../src/odds/messages.js';

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
