import t from 'tap';
import { randomUUID } from 'node:crypto';
import { postJson, startTestService, type TestService } from '../helpers/service.js';
import { freshDatabase } from '../helpers/db.js';
import { Client, image } from '../helpers/ws.js';
import { NATS_BINARY, NatsServer } from '../helpers/nats.js';
import { scrape, value } from '../helpers/metrics.js';

if (!NATS_BINARY) {
  t.test('cluster over NATS', { skip: 'nats-server is not installed here, so the cluster tests cannot run (.ci/run installs Debian\'s nats-server)' }, () => undefined);
} else {
  const nats = await NatsServer.start(t);
  const db = await freshDatabase(t);
  const env = { BUS: 'nats', NATS_URL: nats.url, NATS_PREFIX: `t${randomUUID().slice(0, 8)}` };
  const pods: TestService[] = [await startTestService(t, env, db), await startTestService(t, env, db)];
  const [a, b] = pods;
  const M = '1.200001001';
  const ingest = (pod: TestService, ...items: Record<string, unknown>[]) => postJson(pod.url, '/api/v1/ingest', { data: items });

  t.test('ingest on one pod reaches subscribers on every pod, in order, with the same seq', async (t) => {
    const onA = await Client.connect(a.url);
    const onB = await Client.connect(b.url, { format: 'proto' });
    t.teardown(() => { onA.close(); onB.close(); });
    await onA.request({ op: 'subscribe', mids: [M] });
    await onB.request({ op: 'subscribe', mids: [M] });
    for (let i = 0; i < 20; i++) await ingest(i % 2 ? a : b, image(M, 2 + i / 100));
    const last = a.book.get(M)!.seq;
    await onB.next((f) => f.op === 'odds' && f.seq === last);
    await onA.next((f) => f.op === 'odds' && f.seq === last);
    const seqsB = onB.oddsOf(M).map((f) => f.seq);
    const seqsA = onA.oddsOf(M).map((f) => f.seq);
    t.same(seqsA, seqsB, 'both pods delivered the same sequence');
    t.equal(seqsB.length, 20, 'every update, none lost to a clash of numbers');
    t.ok(seqsB.every((s, i) => i === 0 || s > seqsB[i - 1]), `rising whichever pod took the ingest: ${seqsB.join(',')}`);
    t.equal(b.book.get(M)!.seq, last);
  });

  t.test('REST unsubscribe on one pod detaches the client\'s socket on another', async (t) => {
    const onB = await Client.connect(b.url);
    t.teardown(() => onB.close());
    await onB.request({ op: 'subscribe', mids: [M] });
    const r = await postJson(a.url, '/api/v1/unsubscribe', { data: [M] });
    t.equal(r.status, 200);
    t.same(await onB.next((f) => f.op === 'unsubscribed'), { op: 'unsubscribed', mids: [M] });
    const count = onB.oddsOf(M).length;
    await ingest(a, image(M, 3));
    await onB.settled();
    await new Promise((r) => setTimeout(r, 100));
    await onB.settled();
    t.equal(onB.oddsOf(M).length, count, 'no frame of that market after');
  });

  t.test('a pod started late serves the current image on subscribe', async (t) => {
    await ingest(a, image(M, 4.5));
    const latest = a.book.get(M)!.seq;
    const late = await startTestService(t, env, db);
    const c = await Client.connect(late.url);
    t.teardown(() => c.close());
    await c.request({ op: 'subscribe', mids: [M] });
    const img = await c.next((f) => f.op === 'odds' && f.mid === M);
    t.equal(img.op === 'odds' && img.seq, latest);
    t.equal(img.op === 'odds' && img.r[0].b[0][0], 4.5);
  });

  t.test('NATS stopped and restarted mid-stream: STALE while down, and every book ends equal to the latest images', async (t) => {
    const M2 = '1.200001002';
    const subs = [await Client.connect(a.url), await Client.connect(b.url, { format: 'proto' })];
    t.teardown(() => subs.forEach((c) => c.close()));
    for (const c of subs) await c.request({ op: 'subscribe', mids: [M, M2] });
    let n = 0;
    let stop = false;
    const publisher = (async () => {
      while (!stop) {
        await ingest(n % 2 ? a : b, image(M, 2 + (n % 50) / 100), image(M2, 3 + (n % 50) / 100));
        n++;
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    await new Promise((r) => setTimeout(r, 200));
    await nats.stop();
    t.same(await subs[1].next((f) => f.op === 'feed' && f.status === 'STALE', 5000), { op: 'feed', status: 'STALE' }, 'subscribers told the feed is stale');
    t.equal(value(await scrape(b.url), 'odds_bus_connected'), 0, 'metrics show the bus down');
    await new Promise((r) => setTimeout(r, 300));
    await nats.resume();
    await new Promise((r) => setTimeout(r, 1500));
    stop = true;
    await publisher;
    for (const mid of [M, M2]) {
      const newest = Math.max(a.book.get(mid)!.seq, b.book.get(mid)!.seq);
      for (const c of subs) await c.next((f) => f.op === 'odds' && f.mid === mid && f.seq === newest, 10000);
      t.equal(a.book.get(mid)!.seq, b.book.get(mid)!.seq, `${mid}: both pods hold the same newest seq`);
      t.same(a.book.get(mid)!.image, b.book.get(mid)!.image, `${mid}: and the same image`);
    }
    t.equal(value(await scrape(b.url), 'odds_bus_connected'), 1, 'metrics show the bus back');
  });
}
