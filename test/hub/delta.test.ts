import t from 'tap';
import { isDeepStrictEqual } from 'node:util';
import { freshDatabase } from '../helpers/db.js';
import { MovingMarket } from '../helpers/moving.js';
import { postJson, startTestService } from '../helpers/service.js';
import { FakeClock } from '../helpers/clock.js';
import { Client, type Format } from '../helpers/ws.js';
import { applyDelta } from '../../src/odds/delta.js';
import { encodeFor } from '../../src/odds/codec.js';
import type { OddsMessage, ServerMessage } from '../../src/odds/messages.js';

/**
 * Delta subscribers against image subscribers on the same markets, over real sockets and real
 * ingest: after every frame, the book a delta subscriber builds (src/odds/delta.ts applyDelta)
 * must equal, position for position, the image the other got with the same seq.
 */
const M1 = '1.300000001';
const M2 = '1.300000002';
/** The conflated test's own markets: it shares the first test's service, and sees none of its images this way. */
const M3 = '1.300000003';
const M4 = '1.300000004';

const body = (m: OddsMessage) => ({ mid: m.mid, epoch: m.epoch, seq: m.seq, ts: m.ts, st: m.st, ip: m.ip, r: m.r, tv: m.tv });
const bytes = (format: Format, m: ServerMessage) => {
  const f = encodeFor(format, m);
  return typeof f === 'string' ? Buffer.byteLength(f) : f.byteLength;
};
const rids = (m: OddsMessage) => m.r.map((x) => x.rid).join(',');

interface Followed {
  wrong: string[];
  deltas: number;
  images: number;
  /** Frames compared with the image subscriber's: all but those it was skipped itself. */
  checked: number;
  last?: OddsMessage;
}

/**
 * Replays one market's frames as a delta client keeps them and compares after each with the
 * image subscriber's frame of that seq. `live`: no conflation, so `from` is always seq - 1 and
 * a change of runners must come as an image.
 */
function follow(images: Client, deltas: Client, mid: string, live: boolean): Followed {
  const seen = images.oddsOf(mid);
  const byKey = new Map(seen.map((f) => [`${f.epoch}/${f.seq}`, f]));
  // The image subscriber can fall behind too on a busy machine; then it was resynced (`con`) and
  // the frames it was skipped cannot be compared, but no other frame may be missing.
  const referenceLagged = seen.some((f) => f.con);
  const out: Followed = { wrong: [], deltas: 0, images: 0, checked: 0 };
  let held: OddsMessage | undefined;
  for (const f of deltas.frames) {
    if ((f.op !== 'odds' && f.op !== 'delta') || f.mid !== mid) continue;
    const image = byKey.get(`${f.epoch}/${f.seq}`);
    if (f.op === 'odds') {
      held = f;
      out.images++;
    } else {
      if (live && f.from !== f.seq - 1) out.wrong.push(`seq ${f.seq}: from ${f.from}`);
      const next = held && applyDelta(held, f);
      if (!next) {
        out.wrong.push(`seq ${f.seq}: from ${f.from} does not apply to the held seq ${held?.seq}`);
        continue;
      }
      if (image && bytes(deltas.format, f) >= bytes(deltas.format, { ...image, con: false, cf: false })) out.wrong.push(`seq ${f.seq}: a delta not smaller than its image`);
      const before = byKey.get(`${f.epoch}/${f.from}`);
      if (live && before && rids(before) !== rids(next)) out.wrong.push(`seq ${f.seq}: runners changed in a delta`);
      held = next;
      out.deltas++;
    }
    if (!image) {
      if (!referenceLagged) out.wrong.push(`seq ${f.seq}: the image subscriber never got it`);
      continue;
    }
    out.checked++;
    if (!isDeepStrictEqual(body(held), body(image))) out.wrong.push(`seq ${f.seq}: ${JSON.stringify(body(held))} against ${JSON.stringify(body(image))}`);
  }
  out.last = held;
  return out;
}

async function pair(url: string, mids: string[], format: Format, sub: { depth?: number; conflate?: number }) {
  const images = await Client.connect(url, { format });
  const deltas = await Client.connect(url, { format });
  await images.request({ op: 'subscribe', mids, ...sub });
  await deltas.request({ op: 'subscribe', mids, ...sub, delta: true });
  return { images, deltas, close: () => { images.close(); deltas.close(); } };
}

async function post(url: string, data: Record<string, unknown>[]) {
  const r = await postJson(url, '/api/v1/ingest', { data });
  if (r.status !== 200) throw new Error(`ingest refused: ${JSON.stringify(r.body)}`);
}

async function stream(url: string, markets: MovingMarket[], steps: number, batch = 10) {
  for (let i = 0; i < steps; i += batch) await post(url, Array.from({ length: batch }, (_, j) => markets[(i + j) % markets.length].next()));
}

/** The service of the first two tests: neither changes its settings or its life, and each streams markets of its own. */
const svc = await startTestService(t);

t.test('after every frame a delta subscriber holds the image subscriber\'s image, in both formats, at full depth and at 3', async (t) => {
  const markets = [new MovingMarket(M1, 10, 1), new MovingMarket(M2, 20, 2)];
  await post(svc.url, [...markets.map((m) => m.market()), ...markets.map((m) => m.next(false))]);
  const pairs: ({ format: Format; depth?: number } & Awaited<ReturnType<typeof pair>>)[] = [];
  for (const format of ['json', 'proto'] as const) for (const depth of [undefined, 3]) pairs.push({ format, depth, ...(await pair(svc.url, [M1, M2], format, { depth })) });
  t.teardown(() => pairs.forEach((p) => p.close()));
  await stream(svc.url, markets, 400);
  for (const p of pairs) {
    await p.images.settled();
    await p.deltas.settled();
    for (const mid of [M1, M2]) {
      const f = follow(p.images, p.deltas, mid, true);
      const what = `${p.format} depth ${p.depth ?? 'all'} ${mid}`;
      t.same(f.wrong, [], `${what}: every frame applied and equal`);
      t.ok(f.deltas > 100, `${what}: most changes came as deltas (${f.deltas} deltas, ${f.images} images)`);
      t.ok(f.images >= 5, `${what}: runner changes and unknown totals came as images`);
      t.equal(f.last?.seq, svc.book.get(mid)!.seq, `${what}: ends on the server's newest`);
    }
  }
});

t.test('conflated delta subscribers, one joining mid-stream, apply every frame and end on the newest image', async (t) => {
  // Its own service, whose conflation timers run on a clock this test moves: bursts spread over the 100 ms intervals exactly.
  const clock = new FakeClock(Date.now());
  const svc = await startTestService(t, {}, undefined, { clock });
  const markets = [new MovingMarket(M3, 10, 3), new MovingMarket(M4, 20, 4)];
  await post(svc.url, [...markets.map((m) => m.market()), ...markets.map((m) => m.next(false))]);
  const first = await pair(svc.url, [M3, M4], 'proto', { conflate: 100, depth: 3 });
  t.teardown(first.close);
  const step = async (n: number) => {
    for (let i = 0; i < n; i++) {
      await stream(svc.url, markets, 6, 6);
      clock.advance(15);
    }
  };
  await step(15);
  const late = await pair(svc.url, [M3, M4], 'proto', { conflate: 100, depth: 3 });
  t.teardown(late.close);
  await step(15);
  clock.advance(100);
  for (const [name, p] of [['first', first], ['late', late]] as const) {
    for (const mid of [M3, M4]) {
      const newest = svc.book.get(mid)!.seq;
      await p.deltas.next((f) => (f.op === 'odds' || f.op === 'delta') && f.mid === mid && f.seq === newest, 5000);
      await p.images.next((f) => f.op === 'odds' && f.mid === mid && f.seq === newest, 5000);
      const f = follow(p.images, p.deltas, mid, false);
      t.same(f.wrong, [], `${name} ${mid}: every frame applied and equal`);
      t.ok(f.deltas > 0, `${name} ${mid}: deltas were sent (${f.deltas} deltas, ${f.images} images)`);
    }
  }
});

t.test('a delta subscriber that fell behind is resynced with an image and then follows deltas again', async (t) => {
  const svc = await startTestService(t, { WS_SLOW_BYTES: '65536', WS_MAX_BACKPRESSURE: '67108864', WS_SLOW_CLOSE_MS: '3600000', WS_IDLE_TIMEOUT_S: '960' });
  const markets = [new MovingMarket(M1, 150, 5, 6)];
  await post(svc.url, [...markets.map((m) => m.market()), ...markets.map((m) => m.next(false))]);
  const images = await Client.connect(svc.url);
  const slow = await Client.connect(svc.url);
  t.teardown(() => { images.close(); slow.close(); });
  await images.request({ op: 'subscribe', mids: [M1] });
  await slow.request({ op: 'subscribe', mids: [M1], delta: true });
  const raw = slow.ws;
  raw.pause();
  // Every other image moves every runner's back sizes, so frames are large and fill the buffers fast.
  const shifted = (item: Record<string, unknown>, k: number) => ({ ...item, r: (item.r as { b: number[][] }[]).map((x) => ({ ...x, b: x.b.map(([p, s]) => [p, s + k]) })) });
  t.teardown(() => raw.resume());
  const round = (k: number) => post(svc.url, Array.from({ length: 20 }, (_, i) => (i % 2 ? shifted(markets[0].next(false), k * 20 + i) : markets[0].next(false))));
  // Until the server has it behind, however much the kernel's buffers take on this machine; then once more, so it has moved on.
  const behind = () => [...svc.hub.subscribers()].some((s) => s.behind);
  for (let k = 0; !behind(); k++) {
    if (k === 1000) throw new Error('the stopped socket did not fall behind within 1000 rounds of 20 images');
    await round(k);
  }
  await round(1000);
  raw.resume();
  const resync = await slow.next((f) => f.op === 'odds' && f.con, 20000);
  await stream(svc.url, markets, 20, 5);
  const newest = svc.book.get(M1)!.seq;
  await slow.next((f) => (f.op === 'odds' || f.op === 'delta') && f.seq === newest, 20000);
  await images.next((f) => f.op === 'odds' && f.seq === newest, 20000);
  t.equal(resync.op, 'odds', 'the resync is an image marked con');
  const f = follow(images, slow, M1, false);
  t.same(f.wrong, [], 'every frame applied and equal, across the resync');
  t.ok(f.checked > 0, `frames compared with the image subscriber's (${f.checked})`);
  const after = slow.frames.slice(slow.frames.indexOf(resync) + 1);
  t.ok(after.some((x) => x.op === 'delta'), 'deltas follow the resync');
  t.equal(f.last?.seq, newest, 'its book ends on the server\'s newest');
});

t.test('after a restart the delta subscriber gets an image in the new epoch, then deltas from it', async (t) => {
  const db = await freshDatabase(t);
  const before = await startTestService(t, {}, db);
  const market = new MovingMarket(M1, 10, 6);
  await post(before.url, [market.market(), market.next(false), market.next(false)]);
  const old = await Client.connect(before.url, { format: 'proto' });
  await old.request({ op: 'subscribe', mids: [M1], delta: true });
  await old.settled();
  const held = old.oddsOf(M1).at(-1)!;
  old.close();
  await before.close();

  const after = await startTestService(t, {}, db);
  await post(after.url, [market.next(false)]);
  const pairs = await pair(after.url, [M1, M2], 'proto', {});
  t.teardown(pairs.close);
  const ack = await pairs.deltas.request({ op: 'subscribe', mids: [M1], delta: true, since: { epoch: held.epoch, seqs: { [M1]: held.seq } } });
  t.equal(ack.current, 0, 'nothing is current across a restart');
  await stream(after.url, [market], 10, 5);
  await pairs.deltas.settled();
  await pairs.images.settled();
  const frames = pairs.deltas.frames.filter((f) => f.op === 'odds' || f.op === 'delta');
  t.equal(frames[0].op, 'odds', 'the first frame in the new epoch is an image');
  t.not(frames[0].op === 'odds' && frames[0].epoch, held.epoch, 'in the new epoch');
  const f = follow(pairs.images, pairs.deltas, M1, true);
  t.same(f.wrong, [], 'every frame applied and equal');
  t.ok(f.deltas > 0, 'deltas follow');
});
