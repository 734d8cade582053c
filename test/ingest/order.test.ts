import t from 'tap';
import WebSocket from 'ws';
import { startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { http } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';
import { scrape, value } from '../helpers/metrics.js';
import type { AckMessage, OddsMessage } from '../../src/odds/messages.js';
import { decodeServerProto } from '../../src/odds/codec.js';
import { encodeIngestProto } from '../../src/odds/ingest-codec.js';

/**
 * Batches from one publisher connection take effect in the order sent, even
 * when the publisher pipelines them without waiting for acks and some wait on
 * a transaction while later ones carry only odds.
 */
const M = '1.200001001';

/** A publisher on /ingest that sends without waiting and keeps every ack by id. */
async function publisher(url: string): Promise<{ ws: WebSocket; acks: Map<number, AckMessage>; order: number[]; closed: Promise<number> }> {
  const ws = new WebSocket(url.replace(/^http/, 'ws') + '/ingest', ['odds.v1.json']);
  const acks = new Map<number, AckMessage>();
  const order: number[] = [];
  ws.on('message', (d) => {
    const a = JSON.parse(String(d)) as AckMessage;
    acks.set(a.id, a);
    order.push(a.id);
  });
  const closed = new Promise<number>((ok) => ws.on('close', (code) => ok(code)));
  await new Promise((ok, fail) => ws.once('open', ok).once('error', fail));
  return { ws, acks, order, closed };
}

t.test('pipelined batches mixing reference items and odds end on the last image, with the highest seq, everywhere', async (t) => {
  const svc = await startTestService(t);
  const watcher = await Client.connect(svc.url);
  t.teardown(() => watcher.close());
  await watcher.request({ op: 'subscribe', mids: [M] });
  const pub = await publisher(svc.url);
  t.teardown(() => pub.ws.close());
  const N = 40;
  const price = (i: number) => Math.round((1.5 + i / 100) * 100) / 100;
  for (let i = 1; i <= N; i++) {
    const img = { ...image(M, price(i)), st: i % 3 === 0 ? 'SUSPENDED' : 'OPEN' };
    // Every other batch waits on a transaction before its image: it must not be overtaken.
    const data = i % 2 ? [{ kind: 'market', mid: M, s: i % 4 === 1 }, img] : [img];
    pub.ws.send(JSON.stringify({ id: i, data }));
  }
  await waitFor(() => pub.acks.size === N, () => `an ack for each of the ${N} batches (${pub.acks.size} so far)`, 15000, 10);
  t.ok([...pub.acks.values()].every((a) => a.status === 1), 'every batch acked with status 1');
  t.same(pub.order, Array.from({ length: N }, (_, i) => i + 1), 'acks come back in the order sent');

  const last = { price: price(N), st: N % 3 === 0 ? 'SUSPENDED' : 'OPEN' };
  const late = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => late.close());
  await late.request({ op: 'subscribe', mids: [M] });
  const first = (await late.next((f) => f.op === 'odds' && f.mid === M)) as OddsMessage;
  t.same({ price: first.r[0].b[0][0], st: first.st }, last, 'a new subscriber gets the last batch\'s image');

  await watcher.settled();
  const frames = watcher.oddsOf(M);
  t.same({ price: frames.at(-1)!.r[0].b[0][0], st: frames.at(-1)!.st }, last, 'the live subscriber ends on it too');
  t.equal(frames.at(-1)!.seq, first.seq, 'with the same, highest seq');
  t.same(frames.map((f) => f.r[0].b[0][0]), Array.from({ length: N }, (_, i) => price(i + 1)), 'every image, in the order sent');
  t.ok(frames.every((f, i) => i === 0 || (f.seq === frames[i - 1].seq + 1 && f.epoch === frames[0].epoch)), 'seq rises by exactly one within one epoch');
  const markets = await http<{ data: Record<string, { mid: string; s: boolean }[]> }>(svc.url, '/api/v1/events/markets?eid=30000001');
  t.equal(markets.body.data['30000001'].find((m) => m.mid === M)!.s, (N - 1) % 4 === 1, 'the market state is the last one sent');
});

t.test('a message that is no batch, or whose id an ack cannot echo, is refused in its place: acks keep the order sent, and nothing of it applies', async (t) => {
  const svc = await startTestService(t);
  const pub = await publisher(svc.url);
  t.teardown(() => pub.ws.close());
  // Each good batch waits on a transaction, so the bad ones arrive while it runs.
  const good = (id: number) => JSON.stringify({ id, data: [{ kind: 'market', mid: M, s: true }, image(M, 2 + id / 100)] });
  pub.ws.send(good(1));
  pub.ws.send('{"id": 2, "data": [');
  pub.ws.send(good(3));
  pub.ws.send(JSON.stringify({ id: 'four', data: [image(M, 9)] }));
  pub.ws.send(JSON.stringify({ id: 2 ** 32, data: [image(M, 9)] }));
  pub.ws.send(good(6));
  await waitFor(() => pub.order.length === 6, () => `an ack for each of the 6 messages (${pub.order.length} so far)`, 15000, 10);
  t.same(pub.order, [1, 0, 3, 0, 0, 6], 'acks in the order sent; a refusal the id of which cannot be trusted echoes 0');
  const acks = [...pub.acks.values()];
  t.same(acks.map((a) => a.status), [1, 0, 1, 1], 'by id: the good ones applied, the refusals under id 0');
  const answers: AckMessage[] = [];
  const pub2 = await publisher(svc.url);
  t.teardown(() => pub2.ws.close());
  pub2.ws.on('message', (d) => answers.push(JSON.parse(String(d)) as AckMessage));
  pub2.ws.send(JSON.stringify({ id: -1, data: [image(M, 9)] }));
  pub2.ws.send('not json');
  await waitFor(() => answers.length === 2, 'both refused');
  t.match(answers[0], { id: 0, status: 0, message: 'request body id must be a whole number from 0 to 4294967295 (the ack echoes it)' });
  t.match(answers[1], { id: 0, status: 0, message: /^request body/ });
  const watcher = await Client.connect(svc.url);
  t.teardown(() => watcher.close());
  await watcher.request({ op: 'subscribe', mids: [M] });
  const shown = (await watcher.next((f) => f.op === 'odds' && f.mid === M)) as OddsMessage;
  t.equal(shown.r[0].b[0][0], 2.06, 'the book is the last good batch\'s: no refused image applied');
});

t.test('batches past the in-flight limit are refused, not queued, and were not applied', async (t) => {
  const svc = await startTestService(t, { INGEST_MAX_IN_FLIGHT: '3' });
  const watcher = await Client.connect(svc.url);
  t.teardown(() => watcher.close());
  await watcher.request({ op: 'subscribe', mids: [M] });
  const pub = await publisher(svc.url);
  t.teardown(() => pub.ws.close());
  const N = 30;
  // Each batch waits on a transaction, so the publisher gets ahead of the lane.
  for (let i = 1; i <= N; i++) pub.ws.send(JSON.stringify({ id: i, data: [{ kind: 'market', mid: M, s: true }, image(M, 2 + i / 100)] }));
  await waitFor(() => pub.acks.size === N, () => `an ack for each of the ${N} batches (${pub.acks.size} so far)`, 15000, 10);
  const refused = [...pub.acks.values()].filter((a) => a.status === 0);
  t.ok(refused.length > 0, `some batches refused (${refused.length} of ${N})`);
  t.match(refused[0].message, /3 batches are already in flight on this connection; wait for their acks before sending more \(this batch was not applied\)/);
  await watcher.settled();
  const seen = new Set(watcher.oddsOf(M).map((f) => Math.round(f.r[0].b[0][0] * 100)));
  for (const a of pub.acks.values()) {
    t.equal(seen.has(200 + a.id), a.status === 1, `batch ${a.id} ${a.status ? 'applied' : 'not applied'}`);
  }
});

t.test('a protobuf batch refused unread for a limit is answered under its own id, as a JSON one is: a publisher matching acks by id finds each', async (t) => {
  const svc = await startTestService(t, { INGEST_MAX_IN_FLIGHT: '3' });
  const ws = new WebSocket(svc.url.replace(/^http/, 'ws') + '/ingest', ['odds.v1.proto']);
  t.teardown(() => ws.close());
  const acks: AckMessage[] = [];
  ws.on('message', (d: Buffer) => acks.push(decodeServerProto(new Uint8Array(d)) as AckMessage));
  await new Promise((ok, fail) => ws.once('open', ok).once('error', fail));
  const N = 30;
  // As any encoder writes an IngestBatch, its items (field 1) come before its id (field 2); each waits on a transaction.
  for (let i = 1; i <= N; i++) ws.send(encodeIngestProto([{ kind: 'market', mid: M, s: true }, image(M, 2 + i / 100)], 100 + i));
  await waitFor(() => acks.length === N, () => `an ack for each of the ${N} batches (${acks.length} so far)`, 15000, 10);
  const limited = acks.filter((a) => a.status === 0);
  t.ok(limited.length > 0, `some batches refused (${limited.length} of ${N})`);
  t.match(limited[0], { code: 'LIMIT', message: /3 batches are already in flight on this connection/ });
  t.same(acks.map((a) => a.id).sort((a, b) => a - b), Array.from({ length: N }, (_, i) => 101 + i), 'every ack under its batch\'s id');
});

t.test('a publisher that stops reading its acks loses none: past WS_MAX_BACKPRESSURE of them it is closed (4008) after the ones it had, in order', async (t) => {
  // Queues wide enough for all 120 batches as read (about 0.5 MB each): what is judged here is the acks.
  const svc = await startTestService(t, { INGEST_QUEUE_BYTES: String(256 * 1024 * 1024), INGEST_KEY_QUEUE_BYTES: String(256 * 1024 * 1024) });
  const pub = await publisher(svc.url);
  t.teardown(() => pub.ws.close());
  const ran = async () => value(await scrape(svc.url), 'odds_ingest_batches_total', 'outcome="ok"');
  const before = await ran();
  // Every item names an unknown market, so each ack lists 2,000 refusals: about 150 KB, 18 MB in all,
  // far past what the kernel's buffers take while the publisher reads nothing.
  const N = 120;
  const data = Array.from({ length: 2000 }, (_, i) => ({ kind: 'odds', mid: `9.${i}` }));
  pub.ws.pause();
  for (let id = 1; id <= N; id++) pub.ws.send(JSON.stringify({ id, data }));
  await waitFor(async () => (await ran()) - before === N, `all ${N} batches run`, 60_000);
  pub.ws.resume();
  let code = 0;
  void pub.closed.then((c) => (code = c));
  await waitFor(() => code !== 0 || pub.acks.size === N, () => `every ack, or a close (${pub.acks.size} acks, none since ${pub.order.at(-1)})`, 30_000);
  t.equal(code, 4008, 'closed as a slow consumer');
  t.ok(pub.acks.size > 0 && pub.acks.size < N, `${pub.acks.size} acks read before the close`);
  t.same(pub.order, Array.from({ length: pub.order.length }, (_, i) => i + 1), 'the acks it got are batches 1 to n, none missing');
});
