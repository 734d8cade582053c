import t from 'tap';
import { randomUUID } from 'node:crypto';
import { http, postJson, startTestService, type TestService } from '../helpers/service.js';
import { eventually, waitFor } from '../helpers/wait.js';
import { freshDatabase } from '../helpers/db.js';
import { Client, image } from '../helpers/ws.js';
import { NATS_BINARY, NatsServer } from '../helpers/nats.js';
import { scrape, value } from '../helpers/metrics.js';
import { Registry } from 'prom-client';
import { NatsBus } from '../../src/bus/nats/bus.js';
import { POD_SILENCE_MS } from '../../src/bus/nats/pods.js';
import type { SourceFreshness } from '../../src/bus/types.js';
import { Book } from '../../src/odds/book.js';
import { validateOdds } from '../../src/ingest/validate-odds.js';
import { BusMetrics } from '../../src/metrics/bus.js';
import { createLogger } from '../../src/log.js';

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
  /** The pods judge which image is newest by its publish time (ms): the clock moves on a millisecond before the next. */
  const later = async () => {
    const now = Date.now();
    await waitFor(() => Date.now() > now, 'the clock moved on', 1000, 1);
  };

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
    // Pod B has the image once its book holds it; a ping's ack after that follows any frame B sent of it.
    const sent = a.book.get(M)!;
    await waitFor(() => b.book.get(M)?.epoch === sent.epoch && b.book.get(M)?.seq === sent.seq, 'pod B got the image over NATS', 10000);
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

  const connected = async (pod: TestService) => value(await scrape(pod.url), 'odds_bus_connected');

  t.test('NATS stopped and restarted mid-stream: STALE while down, and every book ends equal to the latest images', async (t) => {
    const M2 = '1.200001002';
    const subs = [await Client.connect(a.url), await Client.connect(b.url, { format: 'proto' })];
    t.teardown(() => subs.forEach((c) => c.close()));
    for (const c of subs) await c.request({ op: 'subscribe', mids: [M, M2] });
    let n = 0;
    let stop = false;
    // Paced by the service's answers, each image a millisecond after the one before at least (the pods order them by publish time).
    const publisher = (async () => {
      while (!stop) {
        await ingest(n % 2 ? a : b, image(M, 2 + (n % 50) / 100), image(M2, 3 + (n % 50) / 100));
        n++;
        await later();
      }
    })();
    await waitFor(() => subs.every((c) => c.oddsOf(M2).length >= 3), 'both subscribers getting the stream before NATS stops', 10000);
    await nats.stop();
    t.same(await subs[1].next((f) => f.op === 'feed' && f.status === 'STALE', 5000), { op: 'feed', status: 'STALE' }, 'subscribers told the feed is stale');
    t.equal(value(await scrape(b.url), 'odds_bus_connected'), 0, 'metrics show the bus down');
    // Each pod lost the bus that numbers prices: every market it holds is stale for that reason, on each of its sockets.
    const cut: number[] = [];
    for (const c of subs) {
      for (const mid of [M, M2]) {
        const f = await c.next((f) => f.op === 'freshness' && f.mid === mid && !f.live, 5000);
        t.match(f, { op: 'freshness', mid, live: false, why: 'bus' }, `${c.format}: ${mid} stale, bus`);
      }
      cut.push(c.frames.length);
    }
    t.ok(value(await scrape(b.url), 'odds_markets_stale', 'reason="bus"') >= 2, 'metrics count the markets stale for the bus');
    const sentBefore = n;
    await waitFor(() => n >= sentBefore + 3, 'the publisher\'s batches taken while NATS is down', 10000);
    await nats.resume();
    // The publisher goes on meanwhile: once back and synced, the markets are live again.
    for (const [i, c] of subs.entries()) {
      for (const mid of [M, M2]) await c.next((f) => f.op === 'freshness' && f.mid === mid && f.live, 20000, cut[i]);
    }
    t.pass('every market live again on every socket once the bus is back');
    stop = true;
    await publisher;
    const same = (mid: string) => {
      const [x, y] = [a.book.get(mid)!, b.book.get(mid)!];
      return x.epoch === y.epoch && x.seq === y.seq && JSON.stringify(x.image) === JSON.stringify(y.image);
    };
    // However long the resync takes on a busy machine, both pods end on one image.
    await eventually(async () => [M, M2].every(same), Boolean, 15000);
    for (const mid of [M, M2]) {
      const held = a.book.get(mid)!;
      for (const c of subs) await c.next((f) => f.op === 'odds' && f.mid === mid && f.seq === held.seq && f.epoch === held.epoch, 10000);
      t.ok(same(mid), `${mid}: both pods hold the same newest image, epoch and seq`);
      t.match(held.epoch, /^s/, `${mid}: numbered by the stream`);
    }
    // Back and synced is said once the resync is done, which may come after the books agree.
    t.equal(await eventually(() => connected(b), (v) => v === 1, 15000), 1, 'metrics show the bus back');
  });

  const bothUp = () => eventually(async () => Math.min(await connected(a), await connected(b)), (v) => v === 1, 15000);
  const newest = (pod: TestService, mid: string) => {
    const e = pod.book.get(mid);
    return e && { epoch: e.epoch, seq: e.seq, price: e.image.runners[0].back[0][0] };
  };
  const lastFrame = (c: Client, mid: string) => {
    const f = c.oddsOf(mid).at(-1);
    return f && { epoch: f.epoch, seq: f.seq, price: f.r[0].b[0][0] };
  };

  t.test('NATS away with ingest on two pods, back with no update after: books, subscribers and the stream all end on the newest image', async (t) => {
    const M3 = '1.200001003';
    const subs = [await Client.connect(a.url), await Client.connect(b.url, { format: 'proto' })];
    t.teardown(() => subs.forEach((c) => c.close()));
    for (const c of subs) await c.request({ op: 'subscribe', mids: [M3] });
    await ingest(a, image(M3, 2));
    await nats.stop();
    await eventually(async () => Math.max(await connected(a), await connected(b)), (v) => v === 0);
    t.equal((await ingest(a, image(M3, 2.1))).status, 200, 'pod A takes ingest while NATS is away');
    await later();
    t.equal((await ingest(b, image(M3, 2.2))).status, 200, 'pod B too');
    await later();
    t.equal((await ingest(a, image(M3, 2.3))).status, 200, 'pod A takes the newest');
    const own = await subs[1].next((f) => f.op === 'odds' && f.mid === M3 && f.r[0].b[0][0] === 2.2);
    t.match(own, { epoch: /^l/ }, 'each pod\'s subscribers see its own images meanwhile, numbered in an epoch of the pod\'s own');
    await nats.resume();
    await bothUp();
    // Both pods store what they took meanwhile once back, each comparing publish times with what the
    // stream holds (test/bus/sequencer.test.ts plays the race where the other pod stores in between).
    const end = await eventually(async () => [newest(a, M3), newest(b, M3)], ([x, y]) => x?.price === 2.3 && JSON.stringify(x) === JSON.stringify(y), 60_000);
    t.same(end[0], end[1], 'both pods hold the same newest image, epoch and seq');
    t.equal(end[0]!.price, 2.3, 'the newest ingested, whichever pod took it');
    t.match(end[0]!.epoch, /^s/, 'numbered by the stream again');
    for (const c of subs) {
      await c.next((f) => f.op === 'odds' && f.mid === M3 && f.seq === end[0]!.seq && f.epoch === end[0]!.epoch, 10000);
      t.same(lastFrame(c, M3), end[0], 'every subscriber\'s newest frame is it');
    }
    const late = await startTestService(t, env, db);
    const c = await Client.connect(late.url);
    t.teardown(() => c.close());
    await c.request({ op: 'subscribe', mids: [M3] });
    await c.next((f) => f.op === 'odds' && f.mid === M3);
    t.same(lastFrame(c, M3), end[0], 'a pod started afterwards serves it from the stream');

    await ingest(b, image(M3, 2.4));
    for (const s of subs) {
      const f = await s.next((x) => x.op === 'odds' && x.mid === M3 && x.r[0].b[0][0] === 2.4, 5000);
      t.match(f, { epoch: end[0]!.epoch, seq: end[0]!.seq + 1 }, 'the next update is the next seq, on every pod');
    }
  });

  t.test('NATS back with an empty store: a new epoch, the newest images kept, and the next ingest reaches every subscriber', async (t) => {
    const M4 = '1.200001004';
    const subs = [await Client.connect(a.url), await Client.connect(b.url, { format: 'proto' })];
    t.teardown(() => subs.forEach((c) => c.close()));
    for (const c of subs) await c.request({ op: 'subscribe', mids: [M4] });
    await ingest(a, image(M4, 5));
    await eventually(async () => newest(b, M4)?.price, (p) => p === 5);
    const before = newest(a, M4)!;
    await nats.reset();
    await bothUp();
    const kept = await eventually(async () => [newest(a, M4), newest(b, M4)], ([x, y]) => !!x && x.epoch !== before.epoch && JSON.stringify(x) === JSON.stringify(y), 15000);
    t.not(kept[0]!.epoch, before.epoch, 'a lost stream is a new epoch');
    t.equal(kept[0]!.price, 5, 'the image the pods held is kept, stored again in the new stream');
    t.equal(kept[0]!.seq, 1, 'numbering starts again in the new epoch');
    const from = subs.map((c) => c.frames.length);
    await ingest(a, image(M4, 5.5));
    for (const [i, c] of subs.entries()) {
      // As long as the other waits after NATS comes back: the pods may still be resyncing on a busy machine.
      const f = await c.next((x) => x.op === 'odds' && x.mid === M4 && x.r[0].b[0][0] === 5.5, 15000, from[i]);
      t.match(f, { epoch: kept[0]!.epoch, seq: 2 }, 'the next ingest reaches every subscriber, in the new epoch');
    }
    const late = await startTestService(t, env, db);
    const c = await Client.connect(late.url);
    t.teardown(() => c.close());
    await c.request({ op: 'subscribe', mids: [M4] });
    const f = await c.next((x) => x.op === 'odds' && x.mid === M4);
    t.match(f, { epoch: kept[0]!.epoch, seq: 2 }, 'and a late pod serves it from the new stream');
  });

  t.test('a pod started while NATS is away is ready, says STALE, serves its own ingest, and joins once NATS is back', async (t) => {
    const M5 = '1.200001005';
    await nats.stop();
    const alone = await startTestService(t, env, db);
    // NATS stays stopped until below, so a pod that waited for it would not have started at all.
    t.equal(await connected(alone), 0, 'it started without NATS');
    t.equal((await http(alone.url, '/ready')).status, 200, 'ready');
    const c = await Client.connect(alone.url);
    t.teardown(() => c.close());
    t.same(await c.next((f) => f.op === 'feed'), { op: 'feed', status: 'STALE' }, 'its sockets are told the feed is stale');
    await c.request({ op: 'subscribe', mids: [M5] });
    t.equal((await ingest(alone, image(M5, 7.7))).status, 200);
    await c.next((f) => f.op === 'odds' && f.mid === M5 && f.r[0].b[0][0] === 7.7);
    await nats.resume();
    await eventually(() => connected(alone), (v) => v === 1, 15000);
    const joined = await eventually(async () => [newest(alone, M5), newest(a, M5), newest(b, M5)], (xs) => xs.every((x) => x?.price === 7.7 && x.epoch === xs[0]!.epoch && x.seq === xs[0]!.seq), 15000);
    t.ok(joined.every((x) => x?.price === 7.7), 'its image reached the other pods once NATS was back');
    t.same(await c.next((f) => f.op === 'feed' && f.status === 'OK', 5000), { op: 'feed', status: 'OK' }, 'and its feed is OK again');
  });

  t.test('freshness between pods: what one pod\'s publishers feed reaches another, and a pod that falls silent (killed) leaves its markets stale there', async (t) => {
    const prefix = `f${randomUUID().slice(0, 8)}`;
    const log = createLogger('error', false, () => undefined);
    /** A bare bus, as a pod's: what it hears of other pods' freshness is kept in order. */
    const pod = async () => {
      const heard: string[] = [];
      const bus = new NatsBus({ url: nats.url, prefix, auth: { kind: 'none' }, tls: undefined, book: new Book(), log, check: validateOdds, metrics: new BusMetrics(new Registry(), 'nats') });
      const fed: SourceFreshness[] = [];
      await bus.start({ odds: () => undefined, down: () => undefined }, { client: () => undefined }, {
        reported: (from, states) => heard.push(...states.map((s) => `${from} ${s.mid} ${s.why ?? 'live'}`)),
        pod: (id, alive) => heard.push(`${id} ${alive ? 'alive' : 'gone'}`),
        fedHere: () => fed,
      });
      return { bus, heard, fed };
    };
    const [one, two] = [await pod(), await pod()];
    t.teardown(() => one.bus.close());
    // Only the two of them use this prefix: the pod the first hears announce itself is the second.
    const twoId = (await eventually(async () => one.heard.find((h) => h.endsWith(' alive')), Boolean, 5000))?.split(' ')[0];
    t.ok(twoId, 'each pod hears the other announce itself');
    two.bus.shareFreshness([{ mid: '1.1', why: undefined, at: 1 }, { mid: '1.2', why: 'late', at: 2 }]);
    await eventually(async () => one.heard, (h) => h.includes(`${twoId} 1.2 late`), 5000);
    t.ok(one.heard.includes(`${twoId} 1.1 live`), 'the states of the markets its publishers feed');
    // Closing its link without a word is what a SIGKILL looks like from the bus: the announcements stop.
    const silent = Date.now();
    await two.bus.close();
    await eventually(async () => one.heard, (h) => h.includes(`${twoId} gone`), POD_SILENCE_MS + 10_000);
    const took = Date.now() - silent;
    t.ok(one.heard.includes(`${twoId} gone`), `declared gone after ${took} ms of silence`);
    // A lower bound only: a busy machine makes the silence seem longer, never shorter (bus/pods is judged on its own clock in bus/witness.test).
    t.ok(took >= POD_SILENCE_MS - 1000, 'not before two announcements were missed');
  });
}

