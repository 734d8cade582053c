import t from 'tap';
import WebSocket from 'ws';
import { postJson, startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { eventually, waitFor } from '../helpers/wait.js';
import { scrape, value } from '../helpers/metrics.js';
import type { DeltaMessage, OddsMessage } from '../../src/odds/messages.js';

/**
 * The freeze attack (issue: any subscriber could freeze every publisher of a
 * pod): sockets that subscribe, stop reading until as much is on its way to
 * them as they may have (they fall behind), unsubscribe and read nothing more,
 * while ten ordinary readers read and one publisher sends 200 images, one at a time. Publishers
 * are slowed only by the service itself, so the publisher is acked for each and every reader gets
 * each, none skipped; the stuck sockets are closed by the server, each alone. Node cannot shrink a socket's receive buffer, but one
 * that never reads keeps the kernel's small initial window, which is as good.
 */
const M = '1.200001007';
const RUNNERS = Array.from({ length: 150 }, (_, i) => i + 1);
const ATTACKERS = 11;
const READERS = 10;
/** The publisher's batches during the attack, an image each. */
const BATCHES = 200;
const STUCK_MS = 20_000;

t.test('sockets that back up and stop reading freeze neither the publisher nor the readers, and are closed', async (t) => {
  const svc = await startTestService(t, { WS_SLOW_CLOSE_MS: String(STUCK_MS) });
  // JSON sockets are the attackers, protobuf ones the readers: the hub lists them apart.
  const attackers = await Promise.all(Array.from({ length: ATTACKERS }, () => Client.connect(svc.url, { format: 'json' })));
  const readers = await Promise.all(Array.from({ length: READERS }, () => Client.connect(svc.url, { format: 'proto' })));
  t.teardown(() => { for (const c of [...attackers, ...readers]) c.close(); });
  for (const c of [...attackers, ...readers]) t.equal((await c.request({ op: 'subscribe', mids: [M] })).status, 1);
  const raws = attackers.map((c) => c.ws);
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
  const acks: number[] = [];
  pub.on('message', (data: Buffer) => acks.push((JSON.parse(data.toString()) as { status: number }).status));
  const attackerCloses = attackers.map((c) => c.closed);
  const published = (i: number) => readers[i].frames.slice(readFrom[i]).filter((f) => (f.op === 'odds' || f.op === 'delta') && f.mid === M) as (OddsMessage | DeltaMessage)[];
  // Batch by batch while the stuck sockets hold what they were sent, each once the one before is
  // acked and at every reader: a publisher frozen by them waits for an ack that never comes, a
  // frozen reader for an image, and the bound fails saying which.
  for (let id = 1; id <= BATCHES; id++) {
    pub.send(JSON.stringify({ id, data: [image(M, 2 + (price++ % 90) / 100, RUNNERS)] }));
    await waitFor(() => acks.length === id && readers.every((_, i) => published(i).length >= id),
      () => `batch ${id}: ${acks.length} acks, readers holding ${readers.map((_, i) => published(i).length).join(', ')} images`, 10_000);
  }
  pub.close();
  t.same(acks.filter((s) => s !== 1), [], `the publisher was acked for every one of ${BATCHES} batches`);
  const skipped = readers.flatMap((_, i) => published(i).filter((f) => f.op === 'odds' && f.con).map((f) => `reader ${i} had frames skipped before seq ${f.seq}`));
  t.same(skipped, [], 'every reader got every image, none skipped');
  t.same(readers.map((_, i) => published(i).length), readers.map(() => BATCHES), 'and nothing more');
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
