import t from 'tap';
import { http, postJson, startTestService } from '../helpers/service.js';
import { FakeClock } from '../helpers/clock.js';
import { Client, image, imageFor } from '../helpers/ws.js';
import type { MarketType } from '../../src/refdata/types.js';
import { eventually } from '../helpers/wait.js';
import type { OddsMessage } from '../../src/odds/messages.js';

/**
 * Subscribing the way betting sites think: by event or sport (markets created
 * later included), with ladder depth and conflation per request, in both
 * formats.
 */
const EVENT = 30000001;
const CRICKET = 4;
const svc = await startTestService(t);
const ingest = (...data: Record<string, unknown>[]) => postJson(svc.url, '/api/v1/ingest', { data });
const marketsOf = async (eid: number) =>
  (await http<{ data: Record<string, { mid: string; go: boolean; ty: MarketType; m?: { mid: string; go: boolean }[] }[]> }>(svc.url, `/api/v1/events/markets?eid=${eid}`)).body.data[eid];
/** Every live market of an event, nested ones included, as a filter covers them. */
const liveMids = async (eid: number) => (await marketsOf(eid)).flatMap((m) => (m.go ? [] : [m.mid, ...(m.m ?? []).filter((n) => !n.go).map((n) => n.mid)]));
/** Each market's type, so each gets prices it can have (a nested market: null, a runner market). */
const types = new Map((await marketsOf(EVENT)).map((m) => [m.mid, m.ty]));
const quote = (mid: string, price: number) => imageFor(types.get(mid) ?? null, mid, price);
let nextMarket = 990;

/** A new market on an event, created through ingest. */
async function newMarket(eid: number): Promise<string> {
  const mid = `1.9${eid}${nextMarket++}`;
  t.equal((await ingest({ kind: 'market', mid, eid, na: 'Late market', ty: 'match-odd', r: [{ rid: 1, na: 'A' }, { rid: 2, na: 'B' }] })).status, 200);
  // It reaches the filters in the same read-model refresh that makes REST show it.
  await eventually(() => marketsOf(eid), (ms) => ms.some((m) => m.mid === mid));
  return mid;
}

for (const format of ['json', 'proto'] as const) {
  t.test(`${format}: subscribing by event takes every live market of it, and one created afterwards`, async (t) => {
    const c = await Client.connect(svc.url, { format });
    t.teardown(() => c.close());
    const mids = await liveMids(EVENT);
    const ack = await c.request({ op: 'subscribe', eids: [EVENT] });
    t.same(ack, { op: 'ack', id: ack.id, status: 1, message: `Subscribed from event ${EVENT} (${mids.length} markets)` });
    await ingest(...mids.map((m, i) => quote(m, 2 + i / 100)));
    await c.settled();
    t.same(new Set(c.frames.filter((f) => f.op === 'odds').map((f) => (f as OddsMessage).mid)), new Set(mids), 'frames of every market, nested ones included');
    const late = await newMarket(EVENT);
    await ingest(image(late, 3.3));
    const f = await c.next((x) => x.op === 'odds' && x.mid === late, 5000);
    t.equal((f as OddsMessage).r[0].b[0][0], 3.3, 'the later market\'s frames arrive without another request');
  });
}

t.test('resume works for filters: markets of the event that did not move get no image', async (t) => {
  const mids = await liveMids(EVENT);
  await ingest(...mids.map((m, i) => quote(m, 5 + i / 100)));
  const first = await Client.connect(svc.url);
  await first.request({ op: 'subscribe', eids: [EVENT] });
  await first.settled();
  const held = new Map(first.frames.filter((f): f is OddsMessage => f.op === 'odds').map((f) => [f.mid, f]));
  first.close();
  t.equal(held.size, mids.length, 'an image of every market');
  const moved = mids[0];
  await ingest(quote(moved, 6));
  const again = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => again.close());
  const epoch = [...held.values()][0].epoch;
  const ack = await again.request({ op: 'subscribe', eids: [EVENT], since: { epoch, seqs: Object.fromEntries([...held].map(([mid, f]) => [mid, f.seq])) } });
  t.equal(ack.current, mids.length - 1, 'all but the one that moved are current');
  await again.settled();
  t.same(again.frames.filter((f) => f.op === 'odds').map((f) => (f as OddsMessage).mid), [moved], 'only its newest image is sent');
});

t.test('subscribing by sport takes every live market of its events, and markets created later', async (t) => {
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  const ack = await c.request({ op: 'subscribe', sis: [CRICKET] });
  t.match(ack, { status: 1, message: new RegExp(`^Subscribed from sport ${CRICKET} \\(\\d+ markets\\)$`) });
  const other = 30000002;
  const late = await newMarket(other);
  await ingest(image(late, 4.4));
  t.equal(((await c.next((x) => x.op === 'odds' && x.mid === late, 5000)) as OddsMessage).r[0].b[0][0], 4.4);
});

t.test('depth 1 gets one level a side while another socket on the same market gets every level', async (t) => {
  const M = '1.200001001';
  const shallow = await Client.connect(svc.url, { format: 'proto' });
  const deep = await Client.connect(svc.url);
  t.teardown(() => { shallow.close(); deep.close(); });
  await shallow.request({ op: 'subscribe', mids: [M], depth: 1 });
  await deep.request({ op: 'subscribe', mids: [M] });
  await ingest(image(M, 2.5));
  const s = (await shallow.next((f) => f.op === 'odds' && f.r[0].b[0][0] === 2.5)) as OddsMessage;
  const d = (await deep.next((f) => f.op === 'odds' && f.r[0].b[0][0] === 2.5)) as OddsMessage;
  t.ok(s.r.every((r) => r.b.length === 1 && r.l.length === 1), 'best level only');
  t.ok(d.r.every((r) => r.b.length === 3 && r.l.length === 3), 'all levels');
  t.same(s.r.map((r) => [r.b[0], r.l[0]]), d.r.map((r) => [r.b[0], r.l[0]]), 'the same best prices');
  t.equal(s.seq, d.seq);
});

t.test('conflating at 1000 ms: one frame a second while updates come ten times a second, and the last is the newest', async (t) => {
  // The service's conflation timer on a clock this test moves: exactly the updates of each second are held back.
  const clock = new FakeClock(Date.now());
  const timed = await startTestService(t, {}, undefined, { clock });
  const M = '1.200001002';
  const c = await Client.connect(timed.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [M], conflate: 1000 });
  await c.settled();
  const from = c.frames.length;
  let last = 0;
  for (let i = 1; i <= 25; i++) {
    last = 2 + i / 100;
    await postJson(timed.url, '/api/v1/ingest', { data: [image(M, last)] });
    clock.advance(100);
  }
  clock.advance(500);
  await c.next((f) => f.op === 'odds' && f.r[0].b[0][0] === last, 2500, from);
  await c.settled();
  const got = c.frames.slice(from).filter((f): f is OddsMessage => f.op === 'odds');
  t.same(got.map((f) => f.r[0].b[0][0]), [2.1, 2.2, 2.25], 'one frame a second, each the newest of its second');
  t.same(got.map((f) => f.cf), [true, true, true], 'each marked as thinned by conflation: updates were held back');
  t.ok(got.every((f) => f.con === false), 'never as a slow consumer');
  t.ok(got.every((f, i) => i === 0 || f.seq > got[i - 1].seq), 'in order');
});

t.test('a filter that would pass the socket\'s market limit is refused, and nothing changes', async (t) => {
  const small = await startTestService(t, { WS_MAX_MARKETS: '5' });
  const c = await Client.connect(small.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: ['1.200001001'] });
  const ack = await c.request({ op: 'subscribe', eids: [EVENT] });
  t.equal(ack.status, 0);
  t.match(ack.message, /^markets .+ did not fit: a socket holds at most 5 markets$/);
  await postJson(small.url, '/api/v1/ingest', { data: [image('1.200001002', 2), image('1.200001001', 2)] });
  await c.settled();
  t.same([...new Set(c.frames.filter((f) => f.op === 'odds').map((f) => (f as OddsMessage).mid))], ['1.200001001'], 'still only the market it had');
});

t.test('event filters are bounded per socket, even on events with no live market', async (t) => {
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  for (let i = 0; i < 4; i++) {
    const ack = await c.request({ op: 'subscribe', eids: Array.from({ length: 50 }, (_, k) => 90000000 + i * 50 + k) });
    t.equal(ack.status, 1, `filters ${i * 50 + 1} to ${i * 50 + 50}`);
  }
  const over = await c.request({ op: 'subscribe', eids: [90009999], sis: [CRICKET] });
  t.same(over, { op: 'ack', id: over.id, status: 0, message: '2 more event and sport filters would pass the limit of 200 per socket' });
  t.equal((await c.request({ op: 'subscribe', eids: [90000000] })).status, 1, 'a filter it holds is not counted again');
});

t.test('unsubscribing by event stops its frames, including those of markets created later', async (t) => {
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', eids: [EVENT] });
  const mids = await liveMids(EVENT);
  const ack = await c.request({ op: 'unsubscribe', eids: [EVENT] });
  t.same(ack, { op: 'ack', id: ack.id, status: 1, message: `Unsubscribed from event ${EVENT}` });
  const gone = await c.next((f) => f.op === 'unsubscribed', 2000, c.frames.indexOf(ack));
  t.same(new Set(gone.op === 'unsubscribed' ? gone.mids : []), new Set(mids), 'then the markets that went with the event, so the client knows what to drop');
  const from = c.frames.length;
  const late = await newMarket(EVENT);
  await ingest(image('1.200001001', 6), image(late, 6));
  await c.settled();
  t.equal(c.frames.slice(from).filter((f) => f.op === 'odds').length, 0, 'no frame of the event after');
});
