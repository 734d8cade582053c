/**
 * `npm run bench:fanout`: odds fan-out of the service against the baseline (ws + Map of sockets),
 * the Socket.IO peer (one room per market) and the ceiling (bare uWS pub/sub).
 * For each server, format (odds.v1.json, odds.v1.proto, JSON with permessage-deflate) and socket
 * count (100, 1,000, 10,000): N sockets each subscribe to K markets; a publisher sends odds
 * through the ingest socket (`/ingest`, acked per message) at rising rates, or at one fixed rate
 * (FANOUT_RATE); every socket's frames and bytes are counted and a few sampled sockets decode
 * every frame for latency and sequence checks. After each ramp at 1,000 and 10,000 sockets, the
 * firehose (fanout/firehose.ts): the publisher pipelines batches as fast as acks come back, and
 * what is delivered is compared with the best held rate. Then mixed subscriptions (fanout/mixed.ts):
 * the service's CPU per frame with depths and conflation mixed against plain subscriptions. The
 * server runs on core 0, the publisher, the counting clients and the sampler on core 1.
 *
 * Settings (env): BENCH_SECONDS (2; each rate step lasts half of it), BENCH_SOCKETS
 * (100,1000,10000), BENCH_FORMATS (json,proto,deflate), BENCH_SERVERS (service,baseline,socketio,
 * ceiling), FANOUT_K (10 markets per socket), FANOUT_MARKETS (100), FANOUT_SAMPLED (1% of the
 * sockets, 20 to 100), FANOUT_START (25000 deliveries/s, doubled each step), FANOUT_RATE (unset:
 * the ramp), FANOUT_P99_MS (50), FANOUT_MEMORY (on), BENCH_PROFILE (on), BENCH_RESULTS_NAME (fanout);
 * the firehose's and mixed subscriptions' settings are in bench/README.md.
 */
import { spawnSync } from 'node:child_process';
import {
  Histogram, Noise, coreBusyPct, waitQuiet, coreTimes, cpuMicros, envFlag, envList, envNumber, fmt, log, machine, mdTable, pinLoadGenerator, rssBytes, sleep,
  startServer, writeResults, type Pinning,
} from './lib/common.js';
import { fanoutMarkets, prepareDatabase, seed } from './lib/data.js';
import { Inspector, profileMarkdown, summarise, type ProfileSummary } from './lib/profile.js';
import { perfAvailable, perfCountSends, perfRecord, perfSummary } from './lib/perf.js';
import { Child } from './fanout/child.js';
import { Clients } from './fanout/clients.js';
import { firehose, type FirehoseResult } from './fanout/firehose.js';
import { measureWindow, mixedRequests, plainRequests, type WindowResult } from './fanout/mixed.js';
import { Publisher } from './fanout/publisher.js';

type Impl = 'service' | 'baseline' | 'socketio' | 'ceiling';
/** `deflate`: JSON with permessage-deflate (the service with WS_COMPRESSION=on); `mixed`: the profiles' half JSON, half protobuf. */
type Format = 'json' | 'proto' | 'deflate' | 'mixed';

const STEP_SECONDS = envNumber('BENCH_SECONDS', 2) / 2;
const SOCKETS = envList('BENCH_SOCKETS', ['100', '1000', '10000']).map(Number);
const FORMATS = envList('BENCH_FORMATS', ['json', 'proto', 'deflate']) as Format[];
const IMPLS = envList('BENCH_SERVERS', ['service', 'baseline', 'socketio', 'ceiling']) as Impl[];
const NAMES: Record<Impl, string> = { service: 'service', baseline: 'baseline (ws)', socketio: 'Socket.IO', ceiling: 'ceiling (bare uWS)' };
/** Formats the servers other than the service run (the quick run compares them on JSON only). */
const PEER_FORMATS = envList('FANOUT_PEER_FORMATS', ['json', 'proto']);
/** Socket.IO speaks JSON through its default parser only; compression is measured on the service alone. */
const runs = (impl: Impl, format: Format): boolean => impl === 'service' || (PEER_FORMATS.includes(format) && format !== 'deflate' && (impl !== 'socketio' || format === 'json'));
/** One measured step per run at this many deliveries/s instead of the ramp (the quick run). */
const FIXED_RATE = process.env.FANOUT_RATE ? envNumber('FANOUT_RATE', 50_000) : undefined;
const MEMORY = envFlag('FANOUT_MEMORY', true);
/**
 * Formats whose runs ramp; the others (the quick run's protobuf and deflate) take one step at the
 * highest rate every ramped run of the same socket count held, where their CPU and bytes per
 * delivery compare with JSON's.
 */
const RAMP_FORMATS = envList('FANOUT_RAMP_FORMATS', ['json', 'proto', 'deflate']);
/** The extra step at exactly half the highest rate held, for the p99 there. */
const HALF_MAX = envFlag('FANOUT_HALF_MAX', true);
const ATTEMPTS = Math.round(envNumber('BENCH_ATTEMPTS', 3));
const K = Math.round(envNumber('FANOUT_K', 10));
const P = Math.round(envNumber('FANOUT_MARKETS', 100));
/** Sampled sockets: FANOUT_SAMPLED, or 1% of the sockets, 20 to 100. */
const SAMPLED = process.env.FANOUT_SAMPLED ? Math.round(envNumber('FANOUT_SAMPLED', 20)) : undefined;
const sampledFor = (n: number) => Math.min(n, SAMPLED ?? Math.max(20, Math.min(100, Math.ceil(n / 100))));
const START = envNumber('FANOUT_START', 25_000);
const P99_LIMIT = envNumber('FANOUT_P99_MS', 50);
const MAX_STEPS = Math.round(envNumber('FANOUT_MAX_STEPS', 9));
/** The publisher and ingest stop being about fan-out beyond this many updates per second. */
const MAX_RATE = envNumber('FANOUT_MAX_RATE', 200_000);
const PROFILE = envFlag('BENCH_PROFILE', true);
const PER_WORKER = 5000;
const FOREIGN_LIMIT = 15;
const PROTOCOL: Record<'json' | 'proto' | 'deflate', string> = { json: 'odds.v1.json', proto: 'odds.v1.proto', deflate: 'odds.v1.json' };
const DEFLATE_OFFER = 'permessage-deflate; client_max_window_bits';
/** The firehose step (fanout/firehose.ts): after the ramp, for these servers, formats and socket counts. */
const FIREHOSE = envFlag('FANOUT_FIREHOSE', true);
const FIREHOSE_SOCKETS = envList('FANOUT_FIREHOSE_SOCKETS', ['1000', '10000']).map(Number);
const FIREHOSE_SERVERS = envList('FANOUT_FIREHOSE_SERVERS', IMPLS) as Impl[];
const FIREHOSE_FORMATS = envList('FANOUT_FIREHOSE_FORMATS', ['json']);
const FIREHOSE_SETTINGS = {
  warmSeconds: envNumber('FANOUT_FIREHOSE_WARM', 0.5),
  seconds: envNumber('FANOUT_FIREHOSE_SECONDS', 2 * STEP_SECONDS),
  pipeline: Math.round(envNumber('BENCH_PIPELINE', 64)),
  drainSeconds: envNumber('FANOUT_FIREHOSE_DRAIN_S', 30),
  maxRssBytes: envNumber('FANOUT_FIREHOSE_MAX_RSS_MB', 4096) * 2 ** 20,
};
/**
 * Updates per firehose batch: unset, the batch the paced publisher sent at the run's best held
 * rate (the updates due per 5 ms tick), so that the firehose differs from that step only in pacing.
 */
const FIREHOSE_BATCH = process.env.FANOUT_FIREHOSE_BATCH ? Math.round(envNumber('FANOUT_FIREHOSE_BATCH', 10)) : undefined;
/** V8 and perf profiles of the service's firehose window (off: they would slow the measured window). */
const FIREHOSE_PROFILE = envFlag('FANOUT_FIREHOSE_PROFILE', false);
/** The service's firehose rate against its best held rate: the team's target. */
const FIREHOSE_TARGET = 0.9;
/** Mixed subscriptions (fanout/mixed.ts): the service at this socket count, plain then mixed at one publish rate. */
const MIXED = envFlag('FANOUT_MIXED', true);
const MIXED_SOCKETS = Math.round(envNumber('FANOUT_MIXED_SOCKETS', 10_000));
const MIXED_RATE = process.env.FANOUT_MIXED_RATE ? envNumber('FANOUT_MIXED_RATE', START) : undefined;
const MIXED_SECONDS = envNumber('FANOUT_MIXED_SECONDS', 2);
/** Every conflation interval (up to 1 s) has ticked before the window opens. */
const MIXED_WARM_SECONDS = 1.5;
const MIXED_TARGET = 1.3;

// ---- one server, one format, one socket count ----

const cpuOf = (c: { user: number; system: number }) => c.user + c.system;

interface Step {
  targetPerSec: number;
  rate: number;
  seconds: number;
  expected: number;
  delivered: number;
  deliveriesPerSec: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  ptP99: number;
  samples: number;
  /** Frames that never arrived, counted once the server had drained. */
  lost: number;
  /** Frames that arrived, but only after the 2 s drain window. */
  late: number;
  sampledLost: number;
  conflated: number;
  reordered: number;
  closed: number;
  refused: number;
  ackP99: number;
  cpuNsPerDelivery: number;
  /** Bytes the counting clients read per frame delivered to them: WebSocket headers and payload (compressed or not). */
  bytesPerDelivery: number;
  serverBusyPct: number;
  clientBusyPct: number;
  /** Whole cores (/proc/stat): more than the processes' own share means other work ran there. */
  core0Pct: number;
  core1Pct: number;
  /** CPU used by other processes during the step, % of a core (a step above 15% is repeated). */
  foreignPct: number;
  cycleMs: number;
  pass: boolean;
  why: string;
}

interface RunResult {
  impl: Impl;
  format: Format;
  sockets: number;
  connectSeconds: number;
  memPerSocketKiB: number;
  /** Of which JS heap (the rest: uWS or Node native memory). */
  heapPerSocketKiB: number;
  rssBeforeMiB: number;
  rssAfterMiB: number;
  idleCpuPct: number;
  /** What the server logged at warn or error level during the run. */
  warnings: string[];
  steps: Step[];
  /** Found its highest rate held (FANOUT_RAMP_FORMATS), rather than one step at a given rate. */
  ramped: boolean;
  /** The step at the reference rate of its socket count (referenceRate), once every run is done. */
  reference: Step | undefined;
  maxHeld: Step | undefined;
  halfMax: Step | undefined;
  firstFail: Step | undefined;
  profile?: ProfileSummary;
  firehose?: FirehoseRun;
  mixedSubs?: MixedRun;
}

/** The firehose step of a run, beside its best held paced rate. */
interface FirehoseRun extends FirehoseResult {
  /** Deliveries/s of the run's highest held paced step (NaN when none held). */
  bestHeld: number;
  /** deliveriesPerSec / bestHeld. */
  ofBestHeld: number;
  pipeline: number;
  batch: number;
  cycleMs: number;
  profile?: ProfileSummary;
}

/** Plain then mixed subscriptions of the same sockets at one publish rate (the service only). */
interface MixedRun {
  /** Deliveries/s plain subscriptions would receive at the rate published. */
  targetPerSec: number;
  plain: WindowResult;
  mixed: WindowResult;
  /** Mixed CPU per frame delivered over plain's. */
  cpuRatio: number;
  /** Subscribe requests the service refused (seen by the sampled sockets); must be 0. */
  refused: number;
}

function assignment(n: number): string[][] {
  return Array.from({ length: n }, (_, i) => Array.from({ length: K }, (_, j) => (i * K + j) % P).map(String));
}

async function runOne(impl: Impl, format: Format, n: number, dbUrl: string, pinning: Pinning, markets: { mid: string; rids: number[] }[],
  opts: { profileAt?: number; fixedAt?: number; firehose?: boolean; mixedAt?: number } = {}): Promise<RunResult> {
  const script: Record<Impl, string> = {
    service: 'dist/src/main.js', baseline: 'dist/bench/baseline/server.js', socketio: 'dist/bench/peers/socketio.js', ceiling: 'dist/bench/ceiling/server.js',
  };
  const env: Record<string, string> = impl === 'service'
    ? {
      DATABASE_URL: dbUrl, PORT: '0', HOST: '127.0.0.1', DEMO_DATA: 'on', SIMULATOR: 'off', LOG_LEVEL: 'warn', LOG_FORMAT: 'json', FEED_STALE_MS: '3600000', DRAIN_DELAY_MS: '0',
      // Thousands of sockets open at once from a few addresses: the admission limits are bench:scale's to measure, not this one's.
      WS_HANDSHAKES_PER_SOURCE: '0', WS_HANDSHAKES_PER_SECOND: '0',
      WS_COMPRESSION: format === 'deflate' ? 'on' : 'off',
    }
    : { DATABASE_URL: dbUrl, PORT: '0', BODIES_FILE: '' };
  const server = await startServer({ name: impl, args: [script[impl]], pinning, inspect: true, env });
  const children: Child[] = [];
  const publisher = new Publisher(markets);
  try {
    const mids = markets.map((m) => m.mid);
    const sets = assignment(n).map((idx) => idx.map((i) => mids[Number(i)]));
    const sampledCount = sampledFor(n);
    const sampledSets = sets.slice(0, sampledCount);
    const rawSets = sets.slice(sampledCount);
    const subsRaw = new Uint32Array(P);
    const subsSampled = new Uint32Array(P);
    const index = new Map(mids.map((m, i) => [m, i]));
    for (const s of rawSets) for (const m of s) subsRaw[index.get(m)!]++;
    for (const s of sampledSets) for (const m of s) subsSampled[index.get(m)!]++;
    const subsPerMarket = (n * K) / P;

    await publisher.open(server.url);
    await sleep(300);
    // Memory is read after a full GC (through the inspector, the same for both servers), so
    // garbage left by connecting does not count as memory per socket.
    const insp = new Inspector(server.inspector!);
    const heap = async () => {
      await insp.call('HeapProfiler.collectGarbage');
      await sleep(200);
      const h = await insp.call<{ usedSize: number }>('Runtime.getHeapUsage');
      return { rss: rssBytes(server.pid), heap: h.usedSize };
    };
    const before = MEMORY && opts.mixedAt === undefined ? await heap() : undefined;

    // Connect: counting clients niced, so the sampler and publisher get the core when they need it.
    const t0 = performance.now();
    const perWorker = format === 'mixed' ? Math.min(PER_WORKER, Math.ceil(rawSets.length / 2)) : PER_WORKER;
    const workers = Array.from({ length: Math.ceil(rawSets.length / perWorker) }, () => Child.start(impl === 'socketio' ? 'sio-client.js' : 'raw-client.js', 10));
    const sampler = Child.start('sampler.js', 0);
    children.push(...workers, sampler);
    const clients = new Clients(workers, sampler);
    const host = '127.0.0.1';
    const connected = await Promise.all([
      ...workers.map((w, wi) => {
        const f = format === 'mixed' ? (wi % 2 ? 'proto' : 'json') : format;
        return w.ask({
          type: 'connect', host, port: server.port, path: '/ws', protocol: PROTOCOL[f], sockets: rawSets.slice(wi * perWorker, (wi + 1) * perWorker).map(plainRequests),
          localAddresses: Array.from({ length: 4 }, (_, k) => `127.0.0.${2 + wi * 4 + k}`), concurrency: 64,
          extensions: format === 'deflate' ? DEFLATE_OFFER : undefined,
        }, 'connected');
      }),
      sampler.ask({
        type: 'connect', url: impl === 'socketio' ? server.url : server.url.replace(/^http/, 'ws') + '/ws', protocol: PROTOCOL[format === 'mixed' ? 'json' : format],
        sockets: sampledSets.map(plainRequests), socketio: impl === 'socketio', deflate: format === 'deflate',
      }, 'connected'),
    ]);
    const failed = connected.reduce((a, c) => a + c.failed, 0);
    if (failed) throw new Error(`${failed} of ${n} sockets failed to connect to the ${impl}`);
    const deflating = connected.slice(0, workers.length).reduce((a, c) => a + c.deflating, 0);
    if (format === 'deflate' && deflating < rawSets.length) throw new Error(`the ${impl} accepted permessage-deflate on ${deflating} of ${rawSets.length} sockets`);
    const rawCounts = async () => {
      const cs = await Promise.all(workers.map((w) => w.ask({ type: 'counts' }, 'counts')));
      const sum = (k: string) => cs.reduce((a, c) => a + c[k], 0);
      return { odds: sum('odds'), acks: sum('acks'), closed: sum('closed'), bytes: sum('bytes'), cpu: cs.reduce((a, c) => a + cpuOf(c.cpu), 0) };
    };
    const untilAcked = async (raw: number, sampled: number) => {
      for (let i = 0; ; i++) {
        const [c, s] = await Promise.all([rawCounts(), sampler.ask({ type: 'stats' }, 'stats')]);
        if (c.acks >= raw && s.acks >= sampled) return;
        if (i > 600) throw new Error(`only ${c.acks + s.acks} of ${raw + sampled} subscribe requests were acknowledged`);
        await sleep(50);
      }
    };
    await untilAcked(rawSets.length, sampledSets.length);
    const connectSeconds = (performance.now() - t0) / 1000;
    let memory = { rssBefore: NaN, rssAfter: NaN, heapPerSocketKiB: NaN, idleCpuPct: NaN };
    if (before) {
      await sleep(500);
      const after = await heap();
      const idle0 = cpuMicros(server.pid);
      await sleep(1000);
      memory = { rssBefore: before.rss, rssAfter: after.rss, heapPerSocketKiB: (after.heap - before.heap) / n / 1024, idleCpuPct: (cpuMicros(server.pid) - idle0) / 1e4 };
    }
    insp.close();
    const { rssBefore, rssAfter, heapPerSocketKiB, idleCpuPct } = memory;
    log(`${impl} ${format} ${n} sockets: connected in ${connectSeconds.toFixed(1)} s` + (before
      ? `, ${((rssAfter - rssBefore) / n / 1024).toFixed(2)} KiB/socket (JS heap ${heapPerSocketKiB.toFixed(2)}), idle CPU ${idleCpuPct.toFixed(1)}%` : ''));

    let lastProfile: ProfileSummary | undefined;
    const frameBytes = format === 'proto' ? 170 : format === 'deflate' ? 220 : 380;
    const fixedCycle = process.env.FANOUT_CYCLE_MS;
    const cycleFor = (rate: number) => {
      if (fixedCycle !== undefined && fixedCycle !== '') return Number(fixedCycle);
      // Keep what waits in the kernel per socket around 16 KB, read at most every 100 ms.
      const perSocket = (rate * K) / P * frameBytes;
      return Math.max(2, Math.min(100, Math.floor((16_384 / perSocket) * 1000)));
    };

    const pids = () => [server.pid, ...children.map((c) => c.proc.pid!)];
    const step = async (targetPerSec: number, seconds: number, profile?: Inspector): Promise<Step> => {
      let best: Step | undefined;
      for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
        await waitQuiet(pids);
        const st = await stepOnce(targetPerSec, seconds, profile);
        // A profiled step keeps its last attempt, whose profile is the one saved.
        if (!best || profile || st.foreignPct < best.foreignPct) best = st;
        if (st.foreignPct < FOREIGN_LIMIT) break;
        log(`other processes used ${st.foreignPct.toFixed(0)}% of a core during the step; repeating it`);
        await publisher.idle();
      }
      return best!;
    };
    const stepOnce = async (targetPerSec: number, seconds: number, profile?: Inspector): Promise<Step> => {
      const rate = targetPerSec / subsPerMarket;
      const cycleMs = cycleFor(rate);
      await Promise.all(workers.map((w) => w.ask({ type: 'cycle', ms: cycleMs }, 'cycled')));
      await sampler.ask({ type: 'reset' }, 'reset');
      publisher.resetStep();
      const refused0 = publisher.refused;
      const c0 = await rawCounts();
      const s0 = await sampler.ask({ type: 'stats' }, 'stats');
      const self0 = process.cpuUsage();
      const cpu0 = cpuMicros(server.pid);
      const cores0 = coreTimes();
      const noise = new Noise(pids);
      const w0 = performance.now();
      if (profile) await profile.start();
      const perf = profile && perfAvailable() ? perfRecord(server.pid, seconds, `fanout-${impl}-${format}-${n}`) : undefined;
      const sends = profile && perfAvailable() ? perfCountSends(server.pid, seconds) : undefined;
      const pub = await publisher.run(rate, seconds);
      // Frames received while publishing (the window perf counts system calls in), when profiling.
      let inWindow = 0;
      if (profile) {
        const [cw, sw] = await Promise.all([rawCounts(), sampler.ask({ type: 'stats' }, 'stats')]);
        inWindow = cw.odds - c0.odds + sw.frames;
      }
      let expectedRaw = 0;
      let expectedSampled = 0;
      for (let m = 0; m < P; m++) {
        expectedRaw += publisher.updates[m] * subsRaw[m];
        expectedSampled += publisher.updates[m] * subsSampled[m];
      }
      // Drain: wait until every frame arrived, or give up 2 s (plus a read cycle) after the last update.
      const deadline = performance.now() + 2000 + 2 * cycleMs;
      let c1 = c0;
      let s1 = s0;
      for (;;) {
        [c1, s1] = await Promise.all([rawCounts(), sampler.ask({ type: 'stats' }, 'stats')]);
        if ((c1.odds - c0.odds >= expectedRaw && s1.frames >= expectedSampled) || performance.now() > deadline) break;
        await sleep(Math.max(20, cycleMs));
      }
      const prof = profile ? await profile.stop() : undefined;
      const wall = (performance.now() - w0) / 1000;
      const cpu = cpuMicros(server.pid) - cpu0;
      const cores = coreBusyPct(cores0, coreTimes());
      const foreignPct = noise.foreignPct();
      await publisher.idle();
      // Behind at the deadline: late or lost? Wait for the backlog to clear, then count again.
      let final = c1.odds - c0.odds + s1.frames;
      if (final < expectedRaw + expectedSampled) {
        const until = performance.now() + 10_000;
        for (let prev = -1; final !== prev && performance.now() < until;) {
          prev = final;
          await sleep(Math.max(300, 2 * cycleMs));
          const [c2, s2] = await Promise.all([rawCounts(), sampler.ask({ type: 'stats' }, 'stats')]);
          final = c2.odds - c0.odds + s2.frames;
        }
      }
      const self = process.cpuUsage(self0);
      const clientCpu = cpuOf(self) + (c1.cpu - c0.cpu) + (cpuOf(s1.cpu) - cpuOf(s0.cpu));
      const hist = Histogram.from(s1.fromTs);
      const ptHist = Histogram.from(s1.fromPt);
      const deliveredRaw = c1.odds - c0.odds;
      const delivered = deliveredRaw + s1.frames;
      const expected = expectedRaw + expectedSampled;
      const st: Step = {
        targetPerSec, rate, seconds: pub.seconds, expected, delivered, deliveriesPerSec: delivered / pub.seconds,
        p50: hist.pMs(50), p99: hist.pMs(99), p999: hist.pMs(99.9), max: hist.max / 1000, ptP99: ptHist.pMs(99), samples: hist.count,
        lost: Math.max(0, expected - final), late: Math.max(0, Math.min(expected, final) - delivered), sampledLost: s1.lost, conflated: s1.conflated, reordered: s1.reordered,
        closed: c1.closed + s1.closed, refused: publisher.refused - refused0, ackP99: publisher.ackLatency.pMs(99),
        cpuNsPerDelivery: (cpu * 1000) / Math.max(1, delivered), bytesPerDelivery: (c1.bytes - c0.bytes) / Math.max(1, deliveredRaw), serverBusyPct: cpu / wall / 1e4, clientBusyPct: clientCpu / wall / 1e4,
        core0Pct: cores[0] ?? NaN, core1Pct: cores[1] ?? NaN, foreignPct, cycleMs, pass: false, why: '',
      };
      const why: string[] = [];
      if (!(st.p99 < P99_LIMIT)) why.push(`p99 ${st.p99.toFixed(1)} ms`);
      if (st.lost) why.push(`${fmt(st.lost)} frames lost`);
      if (st.late) why.push(`${fmt(st.late)} frames over 2 s late`);
      if (st.sampledLost || st.conflated || st.reordered) why.push(`sampled: ${st.sampledLost} lost, ${st.conflated} conflated, ${st.reordered} reordered`);
      if (st.closed) why.push(`${st.closed} sockets closed`);
      if (st.refused) why.push(`${st.refused} batches refused (${publisher.lastRefusal})`);
      st.pass = why.length === 0;
      st.why = why.join('; ');
      if (prof) {
        lastProfile = summarise(prof, `fanout-${impl}-${format}-${n}`, `${fmt(n)} sockets (${format}), ${fmt(rate)} updates/s, ` +
          `${fmt(st.deliveriesPerSec)} deliveries/s, ${st.cpuNsPerDelivery.toFixed(0)} ns CPU/delivery (profilers on)`, cpu);
        const perfFile = await perf;
        if (perfFile) lastProfile.perf = perfSummary(perfFile);
        const syscalls = await sends;
        if (syscalls) lastProfile.framesPerSyscall = inWindow / syscalls;
      }
      log(`${impl} ${format} ${n}: ${fmt(rate)} upd/s -> ${fmt(st.deliveriesPerSec)} deliveries/s, p50 ${st.p50.toFixed(2)} p99 ${st.p99.toFixed(2)} ms, ` +
        `${st.cpuNsPerDelivery.toFixed(0)} ns CPU/delivery, ${impl === 'socketio' ? '' : `${st.bytesPerDelivery.toFixed(0)} B/delivery, `}server ${st.serverBusyPct.toFixed(0)}%/${st.core0Pct.toFixed(0)}% client ${st.clientBusyPct.toFixed(0)}%/${st.core1Pct.toFixed(0)}% (cycle ${cycleMs} ms, others ${foreignPct.toFixed(0)}%) ${st.pass ? 'ok' : 'FAIL: ' + st.why}`);
      return st;
    };

    // Warm-up (JIT, book entries), not recorded, so not repeated when disturbed.
    await stepOnce(Math.min(START, subsPerMarket * MAX_RATE), 1);
    await publisher.idle();

    // The firehose after the ramp: the clients read at the cycle of the best held rate, the publisher pipelines.
    const firehoseStep = async (best: Step | undefined): Promise<FirehoseRun> => {
      const bestRate = (best?.targetPerSec ?? START) / subsPerMarket;
      const cycleMs = cycleFor(bestRate);
      const batch = FIREHOSE_BATCH ?? Math.max(1, Math.round(bestRate * 0.005));
      await clients.cycle(cycleMs);
      const subscribers = Uint32Array.from(subsRaw, (v, i) => v + subsSampled[i]);
      let run: FirehoseRun | undefined;
      for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
        await waitQuiet(pids);
        const insp = FIREHOSE_PROFILE && impl === 'service' ? new Inspector(server.inspector!) : undefined;
        const name = `firehose-${impl}-${format}-${n}`;
        let perf: Promise<string | undefined> | undefined;
        let prof: Awaited<ReturnType<Inspector['stop']>> | undefined;
        let cpuAt = 0;
        try {
          const fh = await firehose({
            publisher, clients, subscribers, serverPid: server.pid, pids,
            window: insp && {
              open: async (seconds) => {
                await insp.start();
                cpuAt = cpuMicros(server.pid);
                perf = perfAvailable() ? perfRecord(server.pid, seconds, name) : undefined;
              },
              close: async () => {
                prof = await insp.stop();
                cpuAt = cpuMicros(server.pid) - cpuAt;
              },
            },
          }, { ...FIREHOSE_SETTINGS, batch, cycleMs });
          const bestHeld = best?.deliveriesPerSec ?? NaN;
          run = { ...fh, bestHeld, ofBestHeld: fh.deliveriesPerSec / bestHeld, pipeline: FIREHOSE_SETTINGS.pipeline, batch, cycleMs };
          if (prof) {
            run.profile = summarise(prof, name, `firehose, ${fmt(n)} sockets (${format}), ${fmt(fh.deliveriesPerSec)} deliveries/s (profilers on)`, cpuAt);
            const perfFile = await perf;
            if (perfFile) run.profile.perf = perfSummary(perfFile);
          }
        } finally {
          insp?.close();
        }
        log(`${impl} ${format} ${n} firehose: ${fmt(run.deliveriesPerSec)} deliveries/s (` +
          `${Number.isFinite(run.ofBestHeld) ? `${run.ofBestHeld.toFixed(2)}x best held ${fmt(run.bestHeld)}` : 'no paced step held'}), batches of ${batch}, ` +
          `${run.cpuNsPerDelivery.toFixed(0)} ns CPU/delivery, ${run.framesPerWrite === null ? 'writes not counted' : `${run.framesPerWrite.toFixed(1)} frames/write`}, ` +
          `acks ${fmt(run.acksPerSec)}/s (${run.refused} refused, mean ${run.ackMeanMs.toFixed(1)} ms), share delivered ${(100 * run.deliveredShare).toFixed(0)}%, ` +
          `p50 ${run.p50.toFixed(1)} p99 ${run.p99.toFixed(1)} ms, newest: ${run.newest.stale} of ${run.newest.checked} stale, ${run.newest.closedSockets} closed` +
          `${run.newest.example ? ` (${run.newest.example})` : ''}, drained ${run.drained ? 'in' : 'NOT in'} ${run.drainSeconds.toFixed(1)} s, RSS ${run.rssMiB.toFixed(0)} MiB` +
          `${run.rssLimitHit ? ' (memory limit: stopped early)' : ''}, others ${run.foreignPct.toFixed(0)}%`);
        if (run.foreignPct < FOREIGN_LIMIT) break;
        log(`other processes used ${run.foreignPct.toFixed(0)}% of a core during the firehose; repeating it`);
      }
      return run!;
    };

    // Plain subscriptions, then the same sockets re-subscribed mixed, at one publish rate.
    const mixedStep = async (targetPerSec: number): Promise<MixedRun> => {
      const rate = targetPerSec / subsPerMarket;
      await clients.cycle(cycleFor(rate));
      const measure = async (what: string) => {
        let best: WindowResult | undefined;
        for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
          await waitQuiet(pids);
          const w = await measureWindow(publisher, clients, server.pid, pids, rate, MIXED_WARM_SECONDS, MIXED_SECONDS);
          log(`${impl} ${n} ${what} subscriptions: ${fmt(rate)} upd/s -> ${fmt(w.deliveriesPerSec)} deliveries/s, ${w.cpuNsPerDelivery.toFixed(0)} ns CPU/delivery, ` +
            `server ${w.serverBusyPct.toFixed(0)}%, p99 ${w.p99.toFixed(1)} ms, others ${w.foreignPct.toFixed(0)}%`);
          if (!best || w.foreignPct < best.foreignPct) best = w;
          if (w.foreignPct < FOREIGN_LIMIT) break;
        }
        return best!;
      };
      const plain = await measure('plain');
      const [c0, s0] = await Promise.all([rawCounts(), sampler.ask({ type: 'stats' }, 'stats')]);
      const rawMixed = rawSets.map((mids, i) => mixedRequests(mids, sampledCount + i));
      const sampledMixed = sampledSets.map((mids, i) => mixedRequests(mids, i));
      await clients.subscribe(rawMixed, sampledMixed, perWorker);
      await untilAcked(c0.acks + rawMixed.reduce((a, r) => a + r.length, 0), s0.acks + sampledMixed.reduce((a, r) => a + r.length, 0));
      const mixed = await measure('mixed');
      const { refused, lastRefusal } = await sampler.ask({ type: 'stats' }, 'stats');
      if (refused) log(`the ${impl} refused ${refused} subscribe requests of the sampled sockets: ${lastRefusal}`);
      return { targetPerSec, plain, mixed, cpuRatio: mixed.cpuNsPerDelivery / plain.cpuNsPerDelivery, refused };
    };

    const steps: Step[] = [];
    let mixedSubs: MixedRun | undefined;
    if (opts.mixedAt !== undefined) {
      mixedSubs = await mixedStep(opts.mixedAt);
    } else if (opts.profileAt !== undefined) {
      const insp = new Inspector(server.inspector!);
      try {
        steps.push(await step(opts.profileAt, STEP_SECONDS, insp));
      } finally {
        insp.close();
      }
    } else {
      const attempt = async (target: number): Promise<Step> => {
        let st = await step(target, STEP_SECONDS);
        // Once more when it failed narrowly: one hiccup (GC, a neighbour's burst) is not a limit.
        if (!st.pass && st.p99 < 4 * P99_LIMIT && st.lost + st.late <= st.expected * 0.01) {
          await sleep(500);
          st = await step(target, STEP_SECONDS);
        }
        steps.push(st);
        return st;
      };
      // Rates double until a step is not held; then the geometric middle of the last two, and half the highest held.
      const ramp = async () => {
        let target = START;
        let fail: Step | undefined;
        for (let i = 0; i < MAX_STEPS && target / subsPerMarket <= MAX_RATE; i++, target *= 2) {
          const st = await attempt(target);
          if (!st.pass) {
            fail = st;
            break;
          }
        }
        if (fail && fail.targetPerSec > START) await attempt(Math.round(fail.targetPerSec / Math.SQRT2));
        const best = steps.filter((x) => x.pass).sort((a, b) => b.targetPerSec - a.targetPerSec)[0];
        if (HALF_MAX && best && best.targetPerSec / 2 >= START / 2 && !steps.some((x) => x.pass && Math.abs(x.targetPerSec - best.targetPerSec / 2) < 1)) {
          await attempt(best.targetPerSec / 2);
        }
      };
      const fixed = opts.fixedAt ?? FIXED_RATE;
      if (fixed !== undefined) await attempt(fixed);
      else await ramp();
    }
    const passed = steps.filter((s) => s.pass);
    const maxHeld = passed.length ? passed.reduce((a, b) => (b.targetPerSec > a.targetPerSec ? b : a)) : undefined;
    const halfMax = maxHeld ? steps.find((s) => Math.abs(s.targetPerSec - maxHeld.targetPerSec / 2) < 1) : undefined;
    if (opts.firehose) await publisher.idle();
    const firehoseRun = opts.firehose ? await firehoseStep(maxHeld) : undefined;
    return {
      impl, format, sockets: n, connectSeconds, memPerSocketKiB: (rssAfter - rssBefore) / n / 1024, heapPerSocketKiB,
      rssBeforeMiB: rssBefore / 2 ** 20, rssAfterMiB: rssAfter / 2 ** 20, idleCpuPct, warnings: server.warnings(), steps,
      ramped: opts.fixedAt === undefined && FIXED_RATE === undefined && opts.profileAt === undefined && opts.mixedAt === undefined, reference: undefined, maxHeld, halfMax,
      firstFail: steps.filter((s) => !s.pass && (!maxHeld || s.targetPerSec > maxHeld.targetPerSec)).sort((a, b) => a.targetPerSec - b.targetPerSec)[0],
      profile: lastProfile, firehose: firehoseRun, mixedSubs,
    };
  } finally {
    publisher.close();
    await Promise.all(children.map((c) => c.close()));
    await server.stop();
  }
}

// ---- main ----

/** The highest step target every one of these runs held (the ramps share their targets). */
function commonHeld(rs: RunResult[]): number | undefined {
  const targets = [...new Set(rs.flatMap((r) => r.steps.map((s) => s.targetPerSec)))].sort((a, b) => b - a);
  return rs.length ? targets.find((t) => rs.every((r) => r.steps.some((s) => s.pass && Math.abs(s.targetPerSec - t) < 1))) : undefined;
}

function fdLimit(): number {
  const r = spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' });
  const v = r.stdout.trim();
  return v === 'unlimited' ? Infinity : Number(v) || 1024;
}

async function main(): Promise<void> {
  const started = Date.now();
  const host = machine();
  const pinning = pinLoadGenerator();
  log(pinning.note);
  const limit = fdLimit();
  const notes: string[] = [];
  const counts = SOCKETS.filter((n) => {
    if (n + 512 <= limit) return true;
    notes.push(`skipped ${n} sockets: the open-file limit is ${limit} (raise it with ulimit -n)`);
    return false;
  });
  const db = await prepareDatabase();
  const results: RunResult[] = [];
  try {
    // Seed once through a service, so the baseline sees the same markets.
    const seeder = await startServer({
      name: 'service (seeding)', args: ['dist/src/main.js'], pinning,
      env: { DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', DEMO_DATA: 'on', SIMULATOR: 'off', LOG_LEVEL: 'warn', LOG_FORMAT: 'json', DRAIN_DELAY_MS: '0' },
    });
    await seed(seeder.url).finally(() => seeder.stop());
    const markets = fanoutMarkets(P);

    for (const n of process.env.FANOUT_PROFILE_ONLY ? [] : counts) {
      for (const format of FORMATS) {
        // Alternate which server goes first, so neither always gets the fresher machine.
        const order = (counts.indexOf(n) + FORMATS.indexOf(format)) % 2 ? [...IMPLS].reverse() : IMPLS;
        const fixedAt = RAMP_FORMATS.includes(format) ? undefined : commonHeld(results.filter((r) => r.sockets === n && r.ramped)) ?? START;
        for (const impl of order.filter((i) => runs(i, format))) {
          // The firehose follows a ramp, whose best held rate it is compared with.
          const withFirehose = FIREHOSE && fixedAt === undefined && FIXED_RATE === undefined && FIREHOSE_SOCKETS.includes(n) && FIREHOSE_SERVERS.includes(impl) && FIREHOSE_FORMATS.includes(format);
          results.push(await runOne(impl, format, n, db.url, pinning, markets, { fixedAt, firehose: withFirehose }));
        }
      }
    }

    const mixedRuns: RunResult[] = [];
    if (MIXED && IMPLS.includes('service') && !process.env.FANOUT_PROFILE_ONLY) {
      if (MIXED_SOCKETS + 512 > limit) notes.push(`skipped mixed subscriptions at ${fmt(MIXED_SOCKETS)} sockets: the open-file limit is ${limit}`);
      else {
        const held = results.find((r) => r.impl === 'service' && r.format === 'json' && r.sockets === MIXED_SOCKETS)?.maxHeld;
        const target = MIXED_RATE ?? (held ? held.targetPerSec / 2 : START);
        log(`mixed subscriptions: the service, ${fmt(MIXED_SOCKETS)} sockets, plain then mixed, at ${fmt(target)} deliveries/s of plain subscriptions`);
        mixedRuns.push(await runOne('service', 'json', MIXED_SOCKETS, db.url, pinning, markets, { mixedAt: target }));
      }
    }

    const profiles: RunResult[] = [];
    if (PROFILE && IMPLS.includes('service') && counts.length) {
      // Where the time goes at a moderate and at the largest socket count, half JSON and half protobuf.
      const at = process.env.FANOUT_PROFILE_SOCKETS ? envList('FANOUT_PROFILE_SOCKETS', []).map(Number)
        : [...new Set([counts.includes(1000) ? 1000 : counts[0], Math.max(...counts)])];
      for (const n of at) {
        const held = results.filter((r) => r.impl === 'service' && r.format !== 'deflate' && r.sockets === n && r.maxHeld).map((r) => r.maxHeld!.targetPerSec);
        const rate = process.env.FANOUT_PROFILE_RATE ? envNumber('FANOUT_PROFILE_RATE', START) : held.length ? Math.min(...held) / 2 : START;
        log(`profiling the service: ${fmt(n)} sockets (half JSON, half protobuf) at ${fmt(rate)} deliveries/s`);
        profiles.push(await runOne('service', 'mixed', n, db.url, pinning, markets, { profileAt: rate }));
      }
    }

    // ---- report ----
    const shown = process.env.FANOUT_PROFILE_ONLY ? [] : counts;
    const find = (impl: Impl, format: Format, n: number) => results.find((r) => r.impl === impl && r.format === format && r.sockets === n);
    // CPU per delivery is compared at one rate per socket count: FANOUT_RATE, or the highest step of the
    // ramp (the same targets for every run) that every run held; at the highest rate each held, the
    // servers would be compared at different loads.
    const refRates = new Map(shown.map((n) => {
      const atN = results.filter((r) => r.sockets === n);
      const ramped = atN.filter((r) => r.ramped);
      return [n, FIXED_RATE ?? (ramped.length ? commonHeld(ramped) : atN[0]?.steps[0]?.targetPerSec) ?? START];
    }));
    for (const r of results) r.reference = r.steps.find((s) => Math.abs(s.targetPerSec - (refRates.get(r.sockets) ?? START)) < 1);
    const refRate = (n: number) => refRates.get(n) ?? START;
    const refNote = shown.map((n) => `${fmt(refRate(n))} deliveries/s at ${fmt(n)} sockets`).join(', ');
    const x = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined && Number.isFinite(a / b) ? `${(a / b).toFixed(1)}x` : '–');
    const pct = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined && Number.isFinite(a / b) ? `${((100 * a) / b).toFixed(0)}%` : '–');
    const rows: (string | number)[][] = [];
    for (const n of shown) {
      for (const format of FORMATS) {
        for (const impl of IMPLS) {
          const r = find(impl, format, n);
          if (!r) continue;
          const m = r.maxHeld;
          const ref = r.reference;
          rows.push([
            fmt(n), format, NAMES[impl], !r.ramped ? '–' : m ? fmt(m.deliveriesPerSec) : 'none',
            !r.ramped || !m ? '–' : `${m.p50.toFixed(1)} / ${m.p99.toFixed(1)}`, r.halfMax && r.ramped ? r.halfMax.p99.toFixed(1) : '–',
            !r.ramped || !m ? '–' : m.cpuNsPerDelivery.toFixed(0), ref ? `${ref.cpuNsPerDelivery.toFixed(0)}` : '–', ref ? `${ref.p99.toFixed(1)}${ref.pass ? '' : ' (not held)'}` : '–',
            // The Socket.IO clients count events, not bytes.
            ref && impl !== 'socketio' ? ref.bytesPerDelivery.toFixed(0) : '–',
            MEMORY ? `${r.memPerSocketKiB.toFixed(1)} (${r.heapPerSocketKiB.toFixed(1)})` : '–', MEMORY ? r.idleCpuPct.toFixed(1) : '–',
            !r.ramped ? '–' : r.firstFail ? `${fmt(r.firstFail.deliveriesPerSec)}/s: ${r.firstFail.why}` : `none up to ${fmt(r.steps[r.steps.length - 1]?.targetPerSec ?? 0)}/s`,
          ]);
        }
      }
    }
    const table = mdTable(
      ['sockets', 'format', 'server', 'max held deliveries/s', 'p50 / p99 ms at max', 'p99 ms at half max', 'CPU ns/delivery at max', 'CPU ns/delivery at the reference rate', 'p99 ms at the reference rate', 'bytes/delivery',
        'KiB/socket (JS heap)', 'idle CPU %', 'first step not held'],
      rows,
    );

    // Service against each other server: throughput by the highest rate held, CPU at the same rate.
    const others: Impl[] = (['baseline', 'socketio', 'ceiling'] as Impl[]).filter((i) => IMPLS.includes(i));
    const ratios = shown.flatMap((n) => FORMATS.filter((f) => f !== 'deflate').flatMap((format) => {
      const s = find('service', format, n);
      return s ? others.map((impl) => {
        const o = find(impl, format, n);
        return {
          sockets: n, format, vs: impl, present: o !== undefined, referenceRate: refRate(n),
          heldRatio: s.ramped && o?.ramped && s.maxHeld && o.maxHeld ? s.maxHeld.deliveriesPerSec / o.maxHeld.deliveriesPerSec : NaN,
          /** The other's CPU per delivery over the service's, at the reference rate: above 1, the service is cheaper. */
          cpuRatio: s.reference && o?.reference ? o.reference.cpuNsPerDelivery / s.reference.cpuNsPerDelivery : NaN,
          /** The same, each at its highest rate held (where per-update and idle costs weigh least). */
          cpuAtMaxRatio: s.ramped && o?.ramped && s.maxHeld && o.maxHeld ? o.maxHeld.cpuNsPerDelivery / s.maxHeld.cpuNsPerDelivery : NaN,
          serviceCpuNs: s.reference?.cpuNsPerDelivery ?? NaN, otherCpuNs: o?.reference?.cpuNsPerDelivery ?? NaN,
          serviceP99: s.reference?.p99 ?? NaN, otherP99: o?.reference?.p99 ?? NaN,
          serviceHeld: s.reference?.pass === true, otherHeld: o?.reference?.pass === true,
        };
      }) : [];
    }));
    const ratioOf = (n: number, format: Format, vs: Impl) => ratios.find((r) => r.sockets === n && r.format === format && r.vs === vs);
    const ratioTable = mdTable(
      ['sockets', 'format', ...others.flatMap((o) => o === 'ceiling'
        ? ['max held: service of ceiling', 'CPU/delivery at the reference rate: ceiling ÷ service', 'at max held']
        : [`max held: service ÷ ${NAMES[o]}`, `CPU/delivery at the reference rate: ${NAMES[o]} ÷ service`, 'at max held'])],
      shown.flatMap((n) => FORMATS.filter((f) => ratios.some((r) => r.sockets === n && r.format === f && r.present)).map((format) => [fmt(n), format, ...others.flatMap((o) => {
        const r = ratioOf(n, format, o);
        if (!r?.present) return ['–', '–', '–'];
        const f = o === 'ceiling' ? pct : x;
        return [f(r.heldRatio, 1), f(r.cpuRatio, 1), f(r.cpuAtMaxRatio, 1)];
      })])),
    );

    // Bandwidth: the service's bytes and CPU per delivery per encoding, at the reference rate.
    const bandwidth = shown.flatMap((n) => (['json', 'proto', 'deflate'] as Format[]).flatMap((format) => {
      const ref = find('service', format, n)?.reference;
      const run = find('service', format, n);
      return ref ? [{ sockets: n, format, referenceRate: refRate(n), maxHeld: run?.ramped ? run.maxHeld?.deliveriesPerSec ?? 0 : null, bytesPerDelivery: ref.bytesPerDelivery, cpuNsPerDelivery: ref.cpuNsPerDelivery, p99: ref.p99, held: ref.pass }] : [];
    }));
    const bandwidthTable = mdTable(
      ['sockets', 'encoding', 'bytes/delivery', 'of JSON', 'CPU ns/delivery', 'vs JSON', 'p99 ms'],
      bandwidth.map((b) => {
        const json = bandwidth.find((j) => j.sockets === b.sockets && j.format === 'json');
        return [fmt(b.sockets), b.format === 'deflate' ? 'JSON + permessage-deflate' : b.format === 'proto' ? 'protobuf' : 'JSON', b.bytesPerDelivery.toFixed(0),
          pct(b.bytesPerDelivery, json?.bytesPerDelivery), b.cpuNsPerDelivery.toFixed(0), x(b.cpuNsPerDelivery, json?.cpuNsPerDelivery), `${b.p99.toFixed(1)}${b.held ? '' : ' (not held)'}`];
      }),
    );

    // Firehose: each server's delivered rate against its own best held paced rate, the publisher's acks, the newest check.
    const firehoses = results.filter((r) => r.firehose).map((r) => {
      const f = r.firehose!;
      return {
        sockets: r.sockets, impl: r.impl, format: r.format, deliveriesPerSec: f.deliveriesPerSec, bestHeld: f.bestHeld, ofBestHeld: f.ofBestHeld, cpuNsPerDelivery: f.cpuNsPerDelivery,
        framesPerWrite: f.framesPerWrite, acksPerSec: f.acksPerSec, refused: f.refused, ackMeanMs: f.ackMeanMs, ackP99Ms: f.ackP99Ms, updatesAcceptedPerSec: f.updatesAcceptedPerSec,
        deliveredShare: f.deliveredShare, p50: f.p50, p99: f.p99, newestChecked: f.newest.checked, newestStale: f.newest.stale, closedSockets: f.newest.closedSockets, drained: f.drained,
      };
    });
    const firehoseTable = mdTable(
      ['sockets', 'format', 'server', 'firehose deliveries/s', 'of best held', 'best held deliveries/s', 'CPU ns/delivery', 'frames/write', 'updates/batch', 'acks/s (refused)', 'ack delay mean / p99 ms',
        'updates accepted/s', 'delivered of accepted', 'p50 / p99 ms', 'newest image', 'drained in', 'RSS MiB', 'server process / core 0', 'clients / core 1'],
      results.filter((r) => r.firehose).map((r) => {
        const f = r.firehose!;
        const newest = f.newest.stale ? `${fmt(f.newest.stale)} of ${fmt(f.newest.checked)} stale` : `all ${fmt(f.newest.checked)} newest`;
        return [fmt(r.sockets), r.format, NAMES[r.impl], fmt(f.deliveriesPerSec), Number.isFinite(f.ofBestHeld) ? `${f.ofBestHeld.toFixed(2)}x` : '–', fmt(f.bestHeld),
          fmt(f.cpuNsPerDelivery), f.framesPerWrite === null ? '–' : f.framesPerWrite.toFixed(1), fmt(f.batch), `${fmt(f.acksPerSec)} (${fmt(f.refused)})`, `${f.ackMeanMs.toFixed(1)} / ${f.ackP99Ms.toFixed(1)}`,
          fmt(f.updatesAcceptedPerSec), `${(100 * f.deliveredShare).toFixed(0)}%`, `${f.p50.toFixed(1)} / ${f.p99.toFixed(1)}`,
          newest + (f.newest.closedSockets ? `, ${fmt(f.newest.closedSockets)} sockets closed` : ''), `${f.drainSeconds.toFixed(1)} s${f.drained ? '' : ' (not drained)'}`,
          `${f.rssMiB.toFixed(0)}${f.rssLimitHit ? ' (limit: stopped)' : ''}`, `${f.serverBusyPct.toFixed(0)}% / ${f.core0Pct.toFixed(0)}%`, `${f.clientBusyPct.toFixed(0)}% / ${f.core1Pct.toFixed(0)}%`];
      }),
    );
    const svcFirehoses = firehoses.filter((f) => f.impl === 'service');
    const firehoseMet = svcFirehoses.length > 0 && svcFirehoses.every((f) => f.ofBestHeld >= FIREHOSE_TARGET && f.newestStale === 0 && f.closedSockets === 0);

    // Mixed subscriptions: CPU per frame delivered, mixed against plain, same sockets and publish rate.
    const mixed = mixedRuns.filter((r) => r.mixedSubs).map((r) => ({ sockets: r.sockets, ...r.mixedSubs! }));
    const mixedTable = mdTable(
      ['sockets', 'subscriptions', 'updates/s', 'deliveries/s', 'CPU ns per frame delivered', 'vs plain', 'p50 / p99 ms', 'server process / core 0'],
      mixed.flatMap((m) => (['plain', 'mixed'] as const).map((k) => [fmt(m.sockets), k, fmt(m[k].rate), fmt(m[k].deliveriesPerSec), fmt(m[k].cpuNsPerDelivery),
        k === 'plain' ? '1x' : `${m.cpuRatio.toFixed(2)}x`, `${m[k].p50.toFixed(1)} / ${m[k].p99.toFixed(1)}`, `${m[k].serverBusyPct.toFixed(0)}% / ${m[k].core0Pct.toFixed(0)}%`])),
    );
    const mixedMet = mixed.length > 0 && mixed.every((m) => m.cpuRatio <= MIXED_TARGET && m.refused === 0);

    const svc = results.filter((r) => r.impl === 'service' && r.format !== 'deflate');
    const x3 = counts.filter((n) => n >= 1000).flatMap((n) => FORMATS.filter((f) => f !== 'deflate').map((f) => {
      const s = find('service', f, n);
      const b = find('baseline', f, n);
      return { n, f, x: s?.maxHeld && b?.maxHeld ? s.maxHeld.deliveriesPerSec / b.maxHeld.deliveriesPerSec : NaN };
    }));
    const met = {
      x3: x3.length > 0 && x3.every((e) => e.x >= 3),
      halfP99: svc.length > 0 && svc.every((r) => r.halfMax !== undefined && r.halfMax.p99 < 20),
      memory: svc.filter((r) => r.sockets >= 1000).every((r) => r.memPerSocketKiB <= 10),
    };
    const stepsTable = mdTable(
      ['sockets', 'format', 'server', 'updates/s', 'deliveries/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'lost / late', 'CPU ns/delivery', 'bytes/delivery', 'server process / core 0', 'clients / core 1', 'held'],
      results.flatMap((r) => r.steps.map((s) => [fmt(r.sockets), r.format, NAMES[r.impl], fmt(s.rate), fmt(s.deliveriesPerSec), s.p50.toFixed(2), s.p99.toFixed(2), s.p999.toFixed(2),
        `${fmt(s.lost)} / ${fmt(s.late)}`, s.cpuNsPerDelivery.toFixed(0), r.impl === 'socketio' ? '–' : s.bytesPerDelivery.toFixed(0), `${s.serverBusyPct.toFixed(0)}% / ${s.core0Pct.toFixed(0)}%`, `${s.clientBusyPct.toFixed(0)}% / ${s.core1Pct.toFixed(0)}%`, s.pass ? 'yes' : `no: ${s.why}`])),
    );
    const md = [
      '## Odds fan-out: service vs baseline, Socket.IO and ceiling',
      '',
      `${host.cpu}, ${host.cores} cores, Node ${process.version}; ${pinning.note}. Each socket subscribes to ${K} of ${P} markets ` +
        `(so each market has sockets/${P / K} subscribers); the publisher sends full images (3 runners x 3 back + 3 lay levels) through ` +
        `the \`/ingest\` socket, one message per 5 ms, acked per message. ` +
        (FIXED_RATE
          ? `One measured step of ${STEP_SECONDS} s per run at ${fmt(FIXED_RATE)} deliveries/s (after a 1 s warm-up), the same for every server; `
          : `Rates double per step of ${STEP_SECONDS} s from ${fmt(START)} deliveries/s, then one step at √2 between the last held and the first not held` +
            (HALF_MAX ? ', and one at exactly half the highest held; ' : '; ') +
            (FORMATS.some((f) => !RAMP_FORMATS.includes(f)) ? `${FORMATS.filter((f) => !RAMP_FORMATS.includes(f)).join(' and ')}: one step at the highest rate every ramped run held; ` : '')) +
        `a step is held when every frame arrived within 2 s (counted on every socket; seq and \`con\` checked on ${counts.map((n) => sampledFor(n)).join('/')} sampled sockets) and the sampled ` +
        `publish-to-receive p99 (receive time minus the publisher's \`ts\`) is under ${P99_LIMIT} ms; a narrow failure is retried once, ` +
        `and a step disturbed by other processes (over ${FOREIGN_LIMIT}% of a core) is repeated. CPU per delivery: the server process's CPU time over the step ` +
        `divided by the frames delivered, compared at one reference rate per socket count, the highest every server held (${refNote}). Bytes per delivery: what the counting clients read ` +
        `(WebSocket headers and payload) per frame. Socket.IO runs JSON only (its default parser), permessage-deflate the service only. ` +
        (MEMORY ? 'KiB/socket: server RSS growth after connecting the idle subscribed sockets, divided by their number. ' : '') + `${db.where}.`,
      ...notes.map((n) => `Note: ${n}.`),
      ...results.filter((r) => r.warnings.length).map((r) => `Note: the ${NAMES[r.impl]} (${r.format}, ${fmt(r.sockets)} sockets) logged: ${r.warnings.slice(0, 3).join(' | ')}`),
      '',
      table,
      '',
      `Ratios (service against each, same run; throughput by the highest rate held, CPU per delivery at the reference rate, ${refNote}):`,
      '',
      ratioTable,
      '',
      `Bandwidth (the service, at the reference rate, ${refNote}; permessage-deflate with uWS's SHARED_COMPRESSOR, which deflates each frame once per socket):`,
      '',
      bandwidthTable,
      '',
      ...(firehoses.length ? [
        `Firehose (each server after its ramp; the publisher keeps ${FIREHOSE_SETTINGS.pipeline} batches in flight on \`/ingest\`, sending the next as each ack arrives, ` +
          `${FIREHOSE_BATCH ? `${FIREHOSE_BATCH} updates each` : 'each batch as large as the paced publisher\'s at the best held rate (the updates due per 5 ms)'}; measured for ${FIREHOSE_SETTINGS.seconds} s after ${FIREHOSE_SETTINGS.warmSeconds} s of warm-in. Of best held: the firehose's ` +
          'deliveries/s over the run\'s highest held paced rate. Frames/write: frames the clients received over the server\'s socket-write system calls ' +
          '(`perf stat` on the sendto, sendmsg, write and writev tracepoints). Delivered of accepted: over the whole firehose, frames received once drained over the frames ' +
          'its accepted updates would make (updates x subscribers); the rest were skipped for sockets behind. Newest image: after the firehose stops and the backlog drains, ' +
          'whether every socket\'s last frame of each of its markets carries the newest seq the server accepted):',
        '',
        firehoseTable,
        '',
        `Firehose target: ${firehoseMet ? 'MET' : 'MISSED'} the service delivers at least ${FIREHOSE_TARGET}x its best held rate past saturation, and every socket ends on the newest image ` +
          `(${svcFirehoses.map((f) => `${fmt(f.sockets)} sockets ${f.ofBestHeld.toFixed(2)}x, ${f.newestStale ? `${fmt(f.newestStale)} stale` : 'newest everywhere'}`).join('; ')}).`,
        '',
      ] : []),
      ...(mixed.length ? [
        `Mixed subscriptions (the service; each socket's markets in two subscribe requests taking the nine mixes of depth all, 1 and 3 and conflation 0, 250 and 1000 ms in turn, ` +
          `against the same sockets with plain subscriptions, at the same publish rate; ${MIXED_SECONDS} s each after ${MIXED_WARM_SECONDS} s of warm-up. Conflated sockets get ` +
          'fewer frames by design: CPU is divided by the frames actually delivered. Latency of the mixed step includes the conflation intervals):',
        '',
        mixedTable,
        '',
        `Mixed target: ${mixedMet ? 'MET' : 'MISSED'} mixed within ${MIXED_TARGET}x of plain CPU per frame delivered (${mixed.map((m) => `${fmt(m.sockets)} sockets ${m.cpuRatio.toFixed(2)}x` +
          (m.refused ? `, ${m.refused} subscribe requests refused` : '')).join('; ')}).`,
        '',
      ] : []),
      ...(FIXED_RATE ? [] : [
        'Targets: ' + (x3.length ? `${met.x3 ? 'MET' : 'MISSED'} ≥3x baseline deliveries/s at 1,000 and 10,000 sockets (${x3.map((e) => `${fmt(e.n)} ${e.f} ${e.x.toFixed(1)}x`).join(', ')}); ` : '') +
          `${met.halfP99 ? 'MET' : 'MISSED'} service p99 < 20 ms at half the max rate (${svc.map((r) => `${fmt(r.sockets)} ${r.format} ${r.halfMax ? r.halfMax.p99.toFixed(1) + ' ms' : 'n/a'}`).join(', ')}); ` +
          (MEMORY && svc.some((r) => r.sockets >= 1000) ? `${met.memory ? 'MET' : 'MISSED'} ≤ 10 KiB per idle subscribed socket (${svc.filter((r) => r.sockets >= 1000).map((r) => `${fmt(r.sockets)} ${r.format} ${r.memPerSocketKiB.toFixed(1)}`).join(', ')}).` : ''),
        '',
      ]),
      ...(profiles.length ? ['CPU profiles of the service during fan-out:', '', ...profiles.filter((p) => p.profile).map((p) => profileMarkdown(`fan-out, ${fmt(p.sockets)} sockets`, p.profile!)), ''] : []),
      ...(results.some((r) => r.firehose?.profile) ? ['CPU profiles of the service during the firehose:', '',
        ...results.filter((r) => r.firehose?.profile).map((r) => profileMarkdown(`firehose, ${fmt(r.sockets)} sockets`, r.firehose!.profile!)), ''] : []),
      '<details><summary>Every step</summary>',
      '',
      stepsTable,
      '',
      '</details>',
    ].join('\n');
    const json = {
      benchmark: 'fanout', at: new Date().toISOString(), machine: host, pinning: pinning.note, database: db.where, notes,
      settings: {
        stepSeconds: STEP_SECONDS, sockets: counts, formats: FORMATS, servers: IMPLS, marketsPerSocket: K, markets: P, sampled: counts.map((n) => sampledFor(n)),
        start: START, fixedRate: FIXED_RATE ?? null, referenceRates: Object.fromEntries(refRates), peerFormats: PEER_FORMATS, p99LimitMs: P99_LIMIT,
        firehose: FIREHOSE ? { ...FIREHOSE_SETTINGS, batch: FIREHOSE_BATCH ?? null, sockets: FIREHOSE_SOCKETS, servers: FIREHOSE_SERVERS, formats: FIREHOSE_FORMATS, target: FIREHOSE_TARGET } : null,
        mixed: MIXED ? { sockets: MIXED_SOCKETS, rate: MIXED_RATE ?? null, seconds: MIXED_SECONDS, warmSeconds: MIXED_WARM_SECONDS, target: MIXED_TARGET } : null,
      },
      met: { ...met, firehose: firehoseMet, mixed: mixedMet }, x3, ratios, bandwidth, firehoses, mixed, results, mixedRuns, profiles, elapsedSeconds: (Date.now() - started) / 1000,
    };
    const files = writeResults(process.env.BENCH_RESULTS_NAME || 'fanout', json, md);
    process.stdout.write('\n' + md + '\n\n');
    log(`wrote ${files.md} and ${files.json} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    await db.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`bench:fanout failed: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
