import t from 'tap';
import WebSocket from 'ws';
import { postJson, startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { eventually } from '../helpers/wait.js';
import { scrape, value } from '../helpers/metrics.js';
import type { DeltaMessage, OddsMessage } from '../../src/odds/messages.js';

/**
 * The freeze attack (issue: any subscriber could freeze every publisher of a
 * pod): sockets that subscribe, stop reading until as much is on its way to
 * them as they may have (they fall behind), unsubscribe and read nothing more,
 * while ten ordinary readers read and one publisher sends an image every 50 ms. Publishers are slowed only by the service itself, so the
 * publisher is acked and every reader gets frames published in every 2 s of
 * the attack in which this process ran, none skipped;
 * the stuck sockets are closed by the server, each alone. Node cannot shrink a socket's receive buffer, but one
 * that never reads keeps the kernel's small initial window, which is as good.
 */
const M = '1.200001007';
const RUNNERS = Array.from({ length: 150 }, (_, i) => i + 1);
const ATTACKERS = 11;
const READERS = 10;
const ATTACK_MS = 30_000;
const WINDOW_MS = 2_000;
/** The publisher sends an image this often. */
const SEND_MS = 50;
const STUCK_MS = 20_000;

t.test('sockets that back up and stop reading freeze neither the publisher nor the readers, and are closed', async (t) => {
  const svc = await startTestService(t, { WS_SLOW_CLOSE_MS: String(STUCK_MS) });
  // JSON sockets are the attackers, protobuf ones the readers: the hub lists them apart.
  const attackers = await Promise.all(Array.from({ length: ATTACKERS }, () => Client.connect(svc.url, { format: 'json' })));
  const readers = await Promise.all(Array.from({ length: READERS }, () => Client.connect(svc.url, { format: 'proto' })));
  t.teardown(() => { for (const c of [...attackers, ...readers]) c.close(); });
  for (const c of [...attackers, ...readers]) t.equal((await c.request({ op: 'subscribe', mids: [M] })).status, 1);
  const raws = attackers.map((c) => (c.ws as unknown as { _socket: import('node:net').Socket })._socket);
  for (const raw of raws) raw.pause();

  // Each attacker takes frames, one at a time, until it has as much on its way as it may (it falls behind).
  const sessions = () => [...svc.hub.subscribers()].filter((s) => s.format === 'json');
  const unsubscribed = new Set<number>();
  let price = 0;
  for (const deadline = Date.now() + 60_000; unsubscribed.size < ATTACKERS;) {
    if (Date.now() > deadline) throw new Error(`only ${unsubscribed.size} of ${ATTACKERS} attackers backed up within 60 s`);
    t.equal((await postJson(svc.url, '/api/v1/ingest', { data: [image(M, 2 + (price++ % 90) / 100, RUNNERS)] })).status, 200);
    sessions().forEach((s, i) => {
      if (unsubscribed.has(i) || !s.behind) return;
      unsubscribed.add(i);
      attackers[i].send({ op: 'unsubscribe', mids: [M] });
    });
  }
  await eventually(async () => sessions().filter((s) => s.size === 0).length, (n) => n === ATTACKERS, 10_000);
  t.comment(`attackers backed up after ${price} images`);

  const readFrom = readers.map((c) => c.frames.length);
  const pub = new WebSocket(svc.url.replace(/^http/, 'ws') + '/ingest', ['odds.v1.json']);
  await new Promise((ok, fail) => pub.once('open', ok).once('error', fail));
  let acks = 0;
  pub.on('message', (data: Buffer) => {
    if ((JSON.parse(data.toString()) as { status: number }).status === 1) acks++;
  });
  const start = Date.now();
  let id = 0;
  const sentAt: number[] = [];
  const sender = setInterval(() => {
    sentAt.push(Date.now());
    pub.send(JSON.stringify({ id: ++id, data: [image(M, 2 + (price++ % 90) / 100, RUNNERS)] }));
  }, SEND_MS);
  const attackerCloses = attackers.map((c) => c.closed);
  await new Promise((r) => setTimeout(r, ATTACK_MS)); // time, not a condition: the attack lasts as long as the test says
  clearInterval(sender);

  const acked = await eventually(async () => acks, (n) => n === id, 10_000);
  pub.close();
  await Promise.all(readers.map((c) => c.settled()));
  // Judged by each frame's publish time, the server's clock: when this busy test process
  // reads its sockets late, the frames still say when the service sent them. A frozen
  // publisher would leave a window with nothing published.
  const published = readers.map((c, i) => c.frames.slice(readFrom[i]).filter((f) => (f.op === 'odds' || f.op === 'delta') && f.mid === M) as (OddsMessage | DeltaMessage)[]);
  const quiet: string[] = [];
  const stalled: string[] = [];
  for (let w = start; w + WINDOW_MS <= start + ATTACK_MS; w += WINDOW_MS) {
    // The service runs in this process: in a window where the process itself hardly ran (another
    // file's load on a busy machine), its sender fired under half its times and nothing could be
    // published, frozen publisher or not. The attack freezes no event loop, so the sender fires on
    // through a frozen publisher: such a window is judged.
    if (sentAt.filter((at) => at >= w && at < w + WINDOW_MS).length < WINDOW_MS / SEND_MS / 2) {
      stalled.push(`${w - start}-${w - start + WINDOW_MS} ms`);
      continue;
    }
    published.forEach((frames, i) => frames.some((f) => f.pt >= w && f.pt < w + WINDOW_MS) || quiet.push(`reader ${i} without a frame published ${w - start}-${w - start + WINDOW_MS} ms`));
  }
  if (stalled.length) t.comment(`not judged, this process having hardly run then: ${stalled.join(', ')}`);
  t.ok(stalled.length < ATTACK_MS / WINDOW_MS, 'at least one window of the attack judged');
  published.forEach((frames, i) => frames.forEach((f) => f.op === 'odds' && f.con && quiet.push(`reader ${i} had frames skipped before seq ${f.seq}`)));
  t.equal(acked, id, 'the publisher was acked for every batch');
  t.same(quiet, [], `the publisher's prices reached every reader in every ${WINDOW_MS} ms of the attack, none skipped`);
  // Closed by the server as a slow consumer (4008): it has read nothing it was sent (its probes
  // unanswered) for WS_SLOW_CLOSE_MS, or, failing that, as a dead peer that answers no ping
  // (WS_IDLE_TIMEOUT_S, 32 s from when it stopped reading).
  const left = await eventually(async () => svc.hub.count('json'), (n) => n === 0, 30_000);
  const slowCloses = value(await scrape(svc.url), 'odds_slow_consumer_closes_total');
  t.equal(left, 0, `every attacker closed by the server (${slowCloses} as slow consumers, the rest as dead peers)`);
  for (const raw of raws) raw.resume();
  await Promise.all(attackerCloses);
  t.equal(svc.hub.count('proto'), READERS, 'the readers were never closed');
});
