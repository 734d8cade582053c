/**
 * `npm run bench:scale`: one pod at many subscriber sockets (BENCH_SOCKETS), each subscribed by
 * event (one request: the event and its five markets) to an exchange-shaped market set whose
 * changes come as the exchange adapter's recordings space them (scale/market.ts, scale/rhythm.ts).
 * Lean raw clients (fanout/raw-client.ts) in child processes over 60 loopback source addresses,
 * and 40 sampled sockets (fanout/sampler.ts, one per event) for latency and loss. Per N: time to
 * connect and subscribe all N; the pod's RSS per subscribed socket; the highest held rate of
 * deliveries (rates double; a step is held when every frame arrived and the sampled p99 is under
 * 50 ms) and CPU per delivery there; p50 and p99 at half that rate; bytes per second; then two
 * reconnect storms, each ending with every socket checked against the newest images: the
 * clients' network going away in silence (scale/storm.ts) and every socket resuming on the same
 * pod with `since` while it still holds the dead ones, and the pod restarted
 * (a new one on the same database and bus, then SIGTERM to the old one) with every socket resuming
 * on the new one. Pod on core 0, load on core 1 (bench/lib/cores.ts).
 *
 * A process may open 20,000 files on this machine, so a pod of more than 18,000 sockets is several
 * service processes (scale/pod.ts), all on core 0, joined by a NATS server of the run's own on
 * core 0 too; its CPU is counted apart. Once per run, before the Ns, the bus's cost per image is
 * measured (scale/bus.ts), and from it and the largest N's costs a table of pods and NATS for
 * 100,000 to 5,000,000 subscribers is written (scale/capacity.ts).
 *
 * Settings (env; read once in scale/settings.ts): BENCH_SOCKETS (10000,25000,50000; a multiple of 40), SCALE_RATE (first step and
 * the storms' feed, updates/s over all markets: 500,000 / N, at most 100), SCALE_STEPS (6),
 * SCALE_SECONDS (2 per step), BENCH_DELTA (off; on adds `delta: true` to every subscribe), SCALE_SHARDS (service processes per pod: 1 up to 10,000, else ceil(2N / 18,000): a silent storm leaves each its dead sockets beside the live ones),
 * SCALE_WORKERS (client processes, at least 4 and at most 18,000 sockets each, a multiple of the
 * shards), SCALE_BUS (on: measure the bus's cost; SCALE_BUS_RATE 1000 images/s, SCALE_BUS_SECONDS 3),
 * SCALE_PROFILE (a folder: every service process writes a V8 CPU profile of its run there),
 * SCALE_SOCKETIO (on: the Socket.IO peer at each N up to 18,000, after the service: it is one process), BENCH_QUIET_MS (10000:
 * longest wait for other jobs to quiet before a step), BENCH_ATTEMPTS (3: a step that failed while
 * others used over 25% of a core is measured again).
 */
import { pinLoadGenerator, type Pinning } from './lib/cores.js';
import { cpuMicros, machine, rssBytes } from './lib/proc.js';
import { Noise, waitQuiet } from './lib/quiet.js';
import { fmt, mdTable, writeResults } from './lib/report.js';
import { log, sleep } from './lib/run.js';
import { startServer } from './lib/server.js';
import { Histogram } from './lib/statistics.js';
import { prepareDatabase } from './lib/data.js';
import { startNats, type Nats } from './lib/nats.js';
import { Child } from './fanout/child.js';
import { busCost, type BusCost } from './scale/bus.js';
import { capacity } from './scale/capacity.js';
import { EVENTS, Feed, Ingest, MARKETS, image, newestSeqs, post, publish, reference } from './scale/market.js';
import { Pod } from './scale/pod.js';
import { recordedRate, recordedShape } from './scale/rhythm.js';
import { storm, type StormResult } from './scale/storm.js';
import { SETTINGS, rateFor, shardsFor, workerCount } from './scale/settings.js';
import { Workers } from './scale/workers.js';

const P99_MS = 50;

const requestOf = (eid: number) => [{ mids: MARKETS.filter((m) => m.eid === eid).map((m) => m.mid), eids: [eid], ...(SETTINGS.delta ? { delta: true } : {}) }];

interface Step {
  rate: number;
  deliveriesPerS: number;
  cpuNsPerDelivery: number;
  bytesPerS: number;
  complete: number;
  p50: number;
  p99: number;
  lost: number;
  /** The NATS server's CPU per update (a pod of several shards), ns. */
  natsNsPerUpdate: number;
  /** CPU other jobs on the machine used meanwhile, % of one core. */
  noisePct: number;
}

/** What a step measures: the serving processes (a pod, or the peer) and the NATS server, if any. */
interface Target {
  pids: number[];
  cpuMicros(): number;
  nats?: Nats;
}

/** One rate for SCALE_SECONDS: deliveries counted against what the feed sent, CPU, bytes and the sampled latency. */
async function step(server: Target, to: Ingest, w: Workers, sampler: Child, rate: number, perEvent: number, tick: { n: number }): Promise<Step> {
  const ours = () => [...server.pids, ...(server.nats ? [server.nats.pid] : []), sampler.proc.pid!, ...w.pids];
  await waitQuiet(ours, 25, SETTINGS.quietMs);
  const noise = new Noise(ours);
  await sampler.ask({ type: 'reset' }, 'reset');
  const c0 = await w.counts();
  const cpu0 = server.cpuMicros();
  const nats0 = server.nats ? cpuMicros(server.nats.pid) : 0;
  const t0 = Date.now();
  const sent = await publish(to, rate, SETTINGS.seconds, tick);
  const wall = (Date.now() - t0) / 1000;
  const cpu = server.cpuMicros() - cpu0;
  const nats = server.nats ? cpuMicros(server.nats.pid) - nats0 : 0;
  await sleep(500);
  const c1 = await w.counts();
  const s = await sampler.ask({ type: 'stats' }, 'stats');
  const h = Histogram.from(s.fromTs);
  const delivered = c1.odds - c0.odds;
  return {
    rate: sent / wall, deliveriesPerS: delivered / wall, cpuNsPerDelivery: (cpu * 1000) / Math.max(1, delivered), bytesPerS: (c1.bytes - c0.bytes) / wall,
    complete: delivered / Math.max(1, sent * perEvent), p50: h.pMs(50), p99: h.pMs(99), lost: s.lost, natsNsPerUpdate: (nats * 1000) / Math.max(1, sent), noisePct: noise.foreignPct(),
  };
}

/** Rates double from `first` until a step loses a frame or its sampled p99 passes 50 ms; then half the highest held. */
async function ramp(name: string, at: (rate: number) => Promise<Step>, first: number): Promise<{ steps: Step[]; held: Step | undefined; half: Step | undefined }> {
  const steps: Step[] = [];
  const ok = (s: Step) => s.complete >= 0.999 && s.lost === 0 && s.p99 <= P99_MS;
  // A first step warms the server (JIT, GC after connecting) and is not counted.
  await at(first);
  for (let k = 0, rate = first; k < SETTINGS.steps; k++, rate *= 2) {
    let s = await at(rate);
    // A step that failed while other jobs used the machine says nothing: measured again.
    for (let a = 1; a < SETTINGS.attempts && !ok(s) && s.noisePct > 25; a++) s = await at(rate);
    steps.push(s);
    log(`${name}: ${fmt(s.rate)} updates/s: ${fmt(s.deliveriesPerS)} deliveries/s (${fmt(100 * s.complete, 1)}%), p99 ${fmt(s.p99, 1)} ms, ${fmt(s.cpuNsPerDelivery)} ns CPU each, others ${fmt(s.noisePct)}% of a core`);
    if (!ok(s)) break;
  }
  const held = steps.filter(ok).at(-1);
  return { steps, held, half: held ? await at(held.rate / 2) : undefined };
}

/** What one server did at one N: connecting, memory, and the rate ramp. */
interface PeerRow {
  connectMs: number;
  connected: number;
  kibPerSocket: number;
  held: Step | undefined;
  half: Step | undefined;
  steps: Step[];
}

/** The service at one N: the same, both storms, and the Socket.IO peer beside it. */
interface Row extends PeerRow {
  sockets: number;
  shards: number;
  workers: number;
  vanish: StormResult;
  restart: StormResult;
  socketio?: PeerRow;
}

/** The Socket.IO peer (one room per market) at the same N, fed the same images through its `/ingest`; no resume there, so no storm. */
async function runPeer(n: number, dbUrl: string): Promise<PeerRow> {
  const pinning = pinLoadGenerator();
  const server = await startServer({ name: 'socketio', args: ['dist/bench/peers/socketio.js'], pinning, env: { DATABASE_URL: dbUrl, PORT: '0' } });
  const w = new Workers(n - EVENTS.length, workerCount(n, 1), 'sio-client.js');
  const sampler = Child.start('sampler.js', 0);
  try {
    const to = await Ingest.open(server.url);
    const tick = { n: 0 };
    await to.send(MARKETS.map((m) => image(m, tick.n++)));
    const rss0 = rssBytes(server.pid);
    const t0 = Date.now();
    const [{ ok }] = await Promise.all([
      w.connect([server.port], (i) => requestOf(EVENTS[i % EVENTS.length]), 120_000),
      sampler.ask({ type: 'connect', url: server.url, protocol: 'odds.v1.json', socketio: true, sockets: EVENTS.map(requestOf) }, 'connected', 120_000),
    ]);
    const connectMs = Date.now() - t0;
    log(`socketio ${n}: ${ok + EVENTS.length} connected and subscribed in ${connectMs} ms`);
    await sleep(1000);
    const kibPerSocket = (rssBytes(server.pid) - rss0) / 1024 / n;
    // Socket.IO starts lower: it did not hold the service's first rate in trial runs.
    const peer: Target = { pids: [server.pid], cpuMicros: () => cpuMicros(server.pid) };
    const r = await ramp(`socketio ${n}`, (rate) => step(peer, to, w, sampler, rate, (n - EVENTS.length) / EVENTS.length, tick), rateFor(n) / 8);
    to.close();
    return { connectMs, connected: ok + EVENTS.length, kibPerSocket, ...r };
  } finally {
    await Promise.all([w.close(), sampler.close()]);
    await server.stop();
  }
}

async function runOne(n: number, dbUrl: string, pinning: Pinning, nats: Nats | undefined): Promise<Row> {
  const shards = shardsFor(n);
  if (shards > 1 && !nats) throw new Error('a pod of several shards needs nats-server');
  const bus = shards > 1 ? { url: nats!.url, prefix: `scale${n}x${Date.now()}` } : undefined;
  let pod = await Pod.start(dbUrl, pinning, shards, bus);
  const w = new Workers(n - EVENTS.length, workerCount(n, shards), undefined, true);
  const sampler = Child.start('sampler.js', 0);
  const target = (): Target => ({ pids: pod.pids, cpuMicros: () => pod.cpuMicros(), nats: bus && nats });
  try {
    await post(pod.url, reference());
    await sleep(1500);
    const tick = { n: 0 };
    await post(pod.url, MARKETS.map((m) => image(m, tick.n++)));
    const rss0 = pod.rssBytes();
    const t0 = Date.now();
    // The sampled sockets spread over the shards too, one event's on each in turn: most see the bus's hop.
    const sampled = pod.shards.map((shard, k) => sampler.ask<{ ok: number }>({
      type: 'connect', url: shard.url.replace(/^http/, 'ws') + '/ws', protocol: 'odds.v1.json', sockets: EVENTS.filter((_, e) => e % shards === k).map(requestOf),
    }, 'connected', 120_000));
    const [{ ok }] = await Promise.all([w.connect(pod.ports, (i) => requestOf(EVENTS[i % EVENTS.length])), ...sampled]);
    const connectMs = Date.now() - t0;
    log(`${n} (${shards} shard${shards > 1 ? 's' : ''}, ${w.pids.length} client processes): ${ok + EVENTS.length} connected and subscribed in ${connectMs} ms`);
    await sleep(1000);
    const kibPerSocket = (pod.rssBytes() - rss0) / 1024 / n;
    let to = await Ingest.open(pod.url);
    const { steps, held, half } = await ramp(`${n}`, (rate) => step(target(), to, w, sampler, rate, (n - EVENTS.length) / EVENTS.length, tick), rateFor(n));

    await w.track(true);
    await post(pod.url, MARKETS.map((m) => image(m, tick.n++)));
    await sleep(1000);
    const feed = new Feed(to, tick);
    // The sampled sockets are not in the storm: they stay on the pod while the others vanish and come back.
    const vanish = await storm('vanish', { w, feed, rate: rateFor(n), server: pod, next: pod, epoch: (await newestSeqs(pod.url)).epoch, served: sampler });
    const next = await Pod.start(dbUrl, pinning, shards, bus);
    to = feed.to = await Ingest.open(next.url);
    await post(next.url, MARKETS.map((m) => image(m, tick.n++)));
    const old = pod;
    pod = next;
    const restart = await storm('restart', { w, feed, rate: rateFor(n), server: old, next, epoch: (await newestSeqs(old.url)).epoch });
    to.close();
    return { sockets: n, shards, workers: w.pids.length, connectMs, connected: ok + EVENTS.length, kibPerSocket, held, half, steps, vanish, restart };
  } finally {
    await Promise.all([w.close(), sampler.close()]);
    await pod.stop();
  }
}

const db = await prepareDatabase();
const pinning = pinLoadGenerator();
const needsNats = SETTINGS.bus || SETTINGS.sockets.some((n) => shardsFor(n) > 1);
const nats = needsNats ? await startNats(pinning) : undefined;
const rows: Row[] = [];
let bus: BusCost | undefined;
try {
  if (SETTINGS.bus) bus = await busCost(db.url, pinning, nats!);
  for (const n of SETTINGS.sockets) {
    const row = await runOne(n, db.url, pinning, nats);
    if (SETTINGS.socketio && n <= 18_000) row.socketio = await runPeer(n, db.url).catch((err) => (log(`socketio ${n}: ${(err as Error).message}`), undefined));
    rows.push(row);
  }
} finally {
  await nats?.stop();
  await db.stop();
}
const stormCell = (s: StormResult) =>
  `${fmt(s.ms)} ms (${fmt(s.reconnected)}; p50 · p90 · p99 · max a socket ${s.back.map((ms) => fmt(ms)).join(' · ')} ms) · ${fmt(s.cpuPct)}% CPU (clients ${fmt(s.clientCpuPct)}%) · ${fmt(s.peakRssMiB)} MiB · ${fmt(s.listenDrops)} SYNs dropped (${fmt(s.synRetried)} connects retried) · ${s.newest.stale === 0 ? `newest everywhere (${fmt(s.newest.checked)})` : `${fmt(s.newest.stale)} stale of ${fmt(s.newest.checked)}`}` +
  (s.silent === false ? ' · not silent (loopback: no network namespace)' : '') +
  (s.served ? ` · the ${fmt(s.served.frames)} frames of the sockets it spared p50 · p99 ${fmt(s.served.p50, 1)} · ${fmt(s.served.p99, 1)} ms, ${fmt(s.served.lost)} lost` : '') +
  (s.reap ? ` · dead sockets reaped in ${fmt(s.reap.ms / 1000, 1)} s (up to ${fmt(s.reap.peakDead)} held; RSS ${fmt(s.reap.rssMiB)} → ${fmt(s.reap.peakRssMiB)} MiB)` : '');
const shape = recordedShape();
const perMarket = recordedRate(EVENTS.length) / MARKETS.length;
// The capacity table's costs: the largest N's held step, or where no step held (a disturbed run), its
// first step that delivered every frame, late or not: CPU per delivery is as good a measure there.
const costed = rows.map((r) => ({ r, s: r.held ?? r.steps.find((x) => x.complete >= 0.999) })).filter((x) => x.s).at(-1);
const md = [
  `# bench:scale (${SETTINGS.delta ? 'delta' : 'images'}), ${new Date().toISOString()}`, '',
  `Changes paced as the exchange adapter's recordings (test/exchange/fixtures.ts) space them: ${fmt(perMarket, 2)} a second per market at their own pace, ` +
    `gaps p10 ${fmt(shape.gapMsP10 as number)} · p50 ${fmt(shape.gapMsP50 as number)} · p90 ${fmt(shape.gapMsP90 as number)} ms, ${fmt(100 * (shape.gapsUnder50ms as number), 1)}% under 50 ms, ` +
    `${fmt(shape.levelsP50 as number)} levels moved per change at p50 (${fmt(shape.levelsP90 as number)} at p90), ${fmt(100 * (shape.messagesMovingTwoMarkets as number))}% of messages moving two markets at once; scaled to each step's rate.`, '',
  mdTable(
    ['sockets (shards)', 'connect + subscribe all', 'KiB RSS / socket', 'max held deliveries/s', 'CPU ns / delivery', 'p50 · p99 at half', 'MB/s at max', 'storm, cut: all back', 'storm, restart: all back', 'refused (retried)'],
    rows.map((r) => [`${fmt(r.sockets)} (${r.shards})`, `${fmt(r.connectMs)} ms`, fmt(r.kibPerSocket, 2), fmt(r.held?.deliveriesPerS ?? NaN), fmt(r.held?.cpuNsPerDelivery ?? NaN),
      r.half ? `${fmt(r.half.p50, 1)} · ${fmt(r.half.p99, 1)} ms` : '–', fmt((r.held?.bytesPerS ?? NaN) / 1e6, 1), stormCell(r.vanish), stormCell(r.restart),
      Object.entries({ ...r.vanish.refused, ...r.restart.refused }).map(([line, k]) => `${fmt(k)} × ${line.replace('HTTP/1.1 ', '')}`).join(', ') || '0']),
  ),
  '', 'Several shards are one pod of as many service processes on the one server core, joined by NATS (its server on that core too, not counted above): ' +
    (rows.filter((r) => r.shards > 1 && r.steps.length).map((r) => {
      const at = r.held ?? r.steps[0];
      return `at ${fmt(r.sockets)}, NATS used ${fmt(at.natsNsPerUpdate)} ns of CPU per update at ${fmt(at.rate)} updates/s (${r.held ? 'the highest held rate' : 'the first step'})`;
    }).join('; ') || 'none this run.'),
  ...(bus ? ['', `The bus's cost per image (${fmt(bus.rate)} images/s, no subscribers; others used up to ${fmt(bus.noisePct)}% of a core meanwhile):`, '',
    mdTable(['service, BUS=memory', 'shard publishing to NATS', 'shard taking it off NATS', 'NATS server, 2 shards', 'NATS server, 3 shards', 'NATS: per image + per pod'], [[
      `${fmt(bus.memoryNs)} ns`, `${fmt(bus.publisherNs)} ns (+${fmt(bus.publisherNs - bus.memoryNs)})`, `${fmt(bus.receiverNs)} ns`, `${fmt(bus.nats[0].ns)} ns`, `${fmt(bus.nats[1].ns)} ns`,
      `${fmt(bus.natsBaseNs)} + ${fmt(bus.natsPerPodNs)} × pods ns`]]),
    '', 'Beyond one machine, on paper (from this run):', '',
    costed ? capacity({
      // The highest rate's: below it the shards' idle work (heartbeats, the bus's intake) is shared by fewer deliveries.
      sockets: costed.r.sockets, kibPerSocket: costed.r.kibPerSocket, nsPerDelivery: costed.s!.cpuNsPerDelivery,
      held: costed.s === costed.r.held,
    }, bus, perMarket) : 'no step delivered every frame: no capacity table.'] : []),
  '', 'Socket.IO (one room per market) at the same N:', '',
  mdTable(
    ['sockets', 'connect + subscribe all', 'KiB RSS / socket', 'max held deliveries/s', 'CPU ns / delivery', 'p50 · p99 at half', 'service ÷ Socket.IO, held rate'],
    rows.map((r) => {
      const p = r.socketio;
      const why = !SETTINGS.socketio ? 'not run (SCALE_SOCKETIO=off)' : r.sockets > 18_000 ? 'not run: one process, and one holds at most 18,000 here' : 'did not connect all (see log)';
      if (!p) return [fmt(r.sockets), why, '–', '–', '–', '–', '–'];
      return [fmt(r.sockets), `${fmt(p.connectMs)} ms (${fmt(p.connected)})`, fmt(p.kibPerSocket, 2), fmt(p.held?.deliveriesPerS ?? NaN), fmt(p.held?.cpuNsPerDelivery ?? NaN),
        p.half ? `${fmt(p.half.p50, 1)} · ${fmt(p.half.p99, 1)} ms` : '–', p.held && r.held ? `${fmt(r.held.deliveriesPerS / p.held.deliveriesPerS, 1)}x` : 'held no step'];
    }),
  ),
].join('\n');
const out = writeResults('scale', { machine: machine(), delta: SETTINGS.delta, pinning: pinning.note, recorded: { perMarket, ...shape }, bus, rows }, md);
console.log(md);
log(`results: ${out.md}`);
