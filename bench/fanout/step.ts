/**
 * The paced phases of a fan-out run: one measured step at a rate (publish, drain, count every
 * frame, judge it held or not), the warm-up, and the ramp (rates doubling until a step is not
 * held, then the geometric middle and half the highest held). Other processes' CPU is watched
 * through every measurement; a disturbed one is measured again.
 */
import { coreBusyPct, coreTimes, cpuMicros } from '../lib/proc.js';
import { Noise, waitQuiet } from '../lib/quiet.js';
import { fmt } from '../lib/report.js';
import { log, sleep } from '../lib/run.js';
import { Histogram } from '../lib/statistics.js';
import { perfAvailable, perfCountSends, perfRecord, perfSummary } from '../lib/perf.js';
import { summarise, type Inspector, type ProfileSummary } from '../lib/profile.js';
import { loadCpu, type Clients, type Counts } from './clients.js';
import type { Rig } from './rig.js';
import { FOREIGN_LIMIT, settings } from './settings.js';

export interface Step {
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
  /** CPU used by other processes during the step, % of a core (a step above FOREIGN_LIMIT is repeated). */
  foreignPct: number;
  cycleMs: number;
  pass: boolean;
  why: string;
}

/** A step measured with the profilers on, and where the server's time went. */
export interface ProfiledStep extends Step {
  profile?: ProfileSummary;
}

/**
 * Measures after waiting for quiet, up to BENCH_ATTEMPTS times while other processes used more
 * than FOREIGN_LIMIT% of a core meanwhile; keeps the least disturbed measurement, or the last.
 */
export async function undisturbed<T extends { foreignPct: number }>(
  rig: Rig, measure: () => Promise<T>, opts: { keepLast?: boolean; what?: string; between?: () => Promise<void> } = {},
): Promise<T> {
  let best: T | undefined;
  for (let attempt = 1; attempt <= settings.attempts; attempt++) {
    await waitQuiet(rig.pids);
    const m = await measure();
    if (!best || opts.keepLast || m.foreignPct < best.foreignPct) best = m;
    if (m.foreignPct < FOREIGN_LIMIT) break;
    if (opts.what) log(`other processes used ${m.foreignPct.toFixed(0)}% of a core during the ${opts.what}; repeating it`);
    await opts.between?.();
  }
  return best!;
}

/** One step at `targetPerSec` deliveries/s, repeated while disturbed; a profiled step keeps its last attempt, whose profile is the one saved. */
export function step(rig: Rig, targetPerSec: number, seconds: number, profile?: Inspector): Promise<ProfiledStep> {
  return undisturbed(rig, () => measureStep(rig, targetPerSec, seconds, profile), { keepLast: profile !== undefined, what: 'step', between: () => rig.publisher.idle() });
}

/** Warm-up (JIT, book entries), not recorded, so not repeated when disturbed. */
export async function warmUp(rig: Rig): Promise<void> {
  await measureStep(rig, Math.min(settings.start, rig.layout.subsPerMarket * settings.maxRate), 1);
  await rig.publisher.idle();
}

/** Behind at the deadline: late or lost? Waits (up to 10 s) for the backlog to clear, then counts again. */
async function countAfterBacklog(clients: Clients, c0: Counts, c1: Counts, expected: number, cycleMs: number): Promise<number> {
  let final = c1.odds - c0.odds + c1.sampler.frames;
  if (final >= expected) return final;
  const until = performance.now() + 10_000;
  for (let prev = -1; final !== prev && performance.now() < until;) {
    prev = final;
    await sleep(Math.max(300, 2 * cycleMs));
    const c2 = await clients.counts();
    final = c2.odds - c0.odds + c2.sampler.frames;
  }
  return final;
}

/** A step is held when no frame was lost, late, out of order or refused, and the sampled p99 is under the bound. */
function judge(st: Step, lastRefusal: string): void {
  const why: string[] = [];
  if (!(st.p99 < settings.p99Limit)) why.push(`p99 ${st.p99.toFixed(1)} ms`);
  if (st.lost) why.push(`${fmt(st.lost)} frames lost`);
  if (st.late) why.push(`${fmt(st.late)} frames over 2 s late`);
  if (st.sampledLost || st.conflated || st.reordered) why.push(`sampled: ${st.sampledLost} lost, ${st.conflated} conflated, ${st.reordered} reordered`);
  if (st.closed) why.push(`${st.closed} sockets closed`);
  if (st.refused) why.push(`${st.refused} batches refused (${lastRefusal})`);
  st.pass = why.length === 0;
  st.why = why.join('; ');
}

/** Publishes for `seconds`, then waits for every frame to arrive (or 2 s past the last update), and judges the step. */
export async function measureStep(rig: Rig, targetPerSec: number, seconds: number, profile?: Inspector): Promise<ProfiledStep> {
  const { impl, format, n, server, publisher, clients, layout: lay } = rig;
  const rate = targetPerSec / lay.subsPerMarket;
  const cycleMs = rig.cycleFor(rate);
  await clients.cycle(cycleMs);
  await clients.sampler.ask({ type: 'reset' }, 'reset');
  publisher.resetStep();
  const refused0 = publisher.refused;
  const c0 = await clients.counts();
  const self0 = process.cpuUsage();
  const cpu0 = cpuMicros(server.pid);
  const cores0 = coreTimes();
  const noise = new Noise(rig.pids);
  const w0 = performance.now();
  const name = `fanout-${impl}-${format}-${n}`;
  if (profile) await profile.start();
  const perf = profile && perfAvailable() ? perfRecord(server.pid, seconds, name) : undefined;
  const sends = profile && perfAvailable() ? perfCountSends(server.pid, seconds) : undefined;
  const pub = await publisher.run(rate, seconds);
  // Frames received while publishing (the window perf counts system calls in), when profiling.
  const inWindow = profile ? (await clients.counts()).total - c0.total : 0;
  let expectedRaw = 0;
  let expectedSampled = 0;
  for (let m = 0; m < settings.markets; m++) {
    expectedRaw += publisher.updates[m] * lay.subsRaw[m];
    expectedSampled += publisher.updates[m] * lay.subsSampled[m];
  }
  // Drain: wait until every frame arrived, or give up 2 s (plus a read cycle) after the last update.
  const deadline = performance.now() + 2000 + 2 * cycleMs;
  let c1 = c0;
  for (;;) {
    c1 = await clients.counts();
    if ((c1.odds - c0.odds >= expectedRaw && c1.sampler.frames >= expectedSampled) || performance.now() > deadline) break;
    await sleep(Math.max(20, cycleMs));
  }
  const prof = profile ? await profile.stop() : undefined;
  const wall = (performance.now() - w0) / 1000;
  const cpu = cpuMicros(server.pid) - cpu0;
  const cores = coreBusyPct(cores0, coreTimes());
  const foreignPct = noise.foreignPct();
  await publisher.idle();
  const final = await countAfterBacklog(clients, c0, c1, expectedRaw + expectedSampled, cycleMs);
  const clientCpu = loadCpu(process.cpuUsage(self0), c0, c1);
  const hist = Histogram.from(c1.sampler.fromTs);
  const ptHist = Histogram.from(c1.sampler.fromPt);
  const deliveredRaw = c1.odds - c0.odds;
  const delivered = deliveredRaw + c1.sampler.frames;
  const expected = expectedRaw + expectedSampled;
  const st: ProfiledStep = {
    targetPerSec, rate, seconds: pub.seconds, expected, delivered, deliveriesPerSec: delivered / pub.seconds,
    p50: hist.pMs(50), p99: hist.pMs(99), p999: hist.pMs(99.9), max: hist.max / 1000, ptP99: ptHist.pMs(99), samples: hist.count,
    lost: Math.max(0, expected - final), late: Math.max(0, Math.min(expected, final) - delivered),
    sampledLost: c1.sampler.lost, conflated: c1.sampler.conflated, reordered: c1.sampler.reordered,
    closed: c1.closed + c1.sampler.closed, refused: publisher.refused - refused0, ackP99: publisher.ackLatency.pMs(99),
    cpuNsPerDelivery: (cpu * 1000) / Math.max(1, delivered), bytesPerDelivery: (c1.bytes - c0.bytes) / Math.max(1, deliveredRaw),
    serverBusyPct: cpu / wall / 1e4, clientBusyPct: clientCpu / wall / 1e4,
    core0Pct: cores[0] ?? NaN, core1Pct: cores[1] ?? NaN, foreignPct, cycleMs, pass: false, why: '',
  };
  judge(st, publisher.lastRefusal);
  if (prof) {
    st.profile = summarise(prof, name, `${fmt(n)} sockets (${format}), ${fmt(rate)} updates/s, ` +
      `${fmt(st.deliveriesPerSec)} deliveries/s, ${st.cpuNsPerDelivery.toFixed(0)} ns CPU/delivery (profilers on)`, cpu);
    const perfFile = await perf;
    if (perfFile) st.profile.perf = perfSummary(perfFile);
    const syscalls = await sends;
    if (syscalls) st.profile.framesPerSyscall = inWindow / syscalls;
  }
  log(`${impl} ${format} ${n}: ${fmt(rate)} upd/s -> ${fmt(st.deliveriesPerSec)} deliveries/s, p50 ${st.p50.toFixed(2)} p99 ${st.p99.toFixed(2)} ms, ` +
    `${st.cpuNsPerDelivery.toFixed(0)} ns CPU/delivery, ${impl === 'socketio' ? '' : `${st.bytesPerDelivery.toFixed(0)} B/delivery, `}server ${st.serverBusyPct.toFixed(0)}%/${st.core0Pct.toFixed(0)}% ` +
    `client ${st.clientBusyPct.toFixed(0)}%/${st.core1Pct.toFixed(0)}% (cycle ${cycleMs} ms, others ${foreignPct.toFixed(0)}%) ${st.pass ? 'ok' : 'FAIL: ' + st.why}`);
  return st;
}

/** Ramp: rates double until a step is not held; then the geometric middle of the last two, and half the highest held. Or one step at `fixedAt`. */
export async function ramp(rig: Rig, fixedAt: number | undefined): Promise<Step[]> {
  const { start, maxSteps, maxRate, halfMax, p99Limit, stepSeconds } = settings;
  const steps: Step[] = [];
  const attempt = async (target: number): Promise<Step> => {
    let st = await step(rig, target, stepSeconds);
    // Once more when it failed narrowly: one hiccup (GC, a neighbour's burst) is not a limit.
    if (!st.pass && st.p99 < 4 * p99Limit && st.lost + st.late <= st.expected * 0.01) {
      await sleep(500);
      st = await step(rig, target, stepSeconds);
    }
    steps.push(st);
    return st;
  };
  if (fixedAt !== undefined) {
    await attempt(fixedAt);
    return steps;
  }
  let target = start;
  let fail: Step | undefined;
  for (let i = 0; i < maxSteps && target / rig.layout.subsPerMarket <= maxRate; i++, target *= 2) {
    const st = await attempt(target);
    if (!st.pass) {
      fail = st;
      break;
    }
  }
  if (fail && fail.targetPerSec > start) await attempt(Math.round(fail.targetPerSec / Math.SQRT2));
  const best = steps.filter((x) => x.pass).sort((a, b) => b.targetPerSec - a.targetPerSec)[0];
  if (halfMax && best && best.targetPerSec / 2 >= start / 2 && !steps.some((x) => x.pass && Math.abs(x.targetPerSec - best.targetPerSec / 2) < 1)) {
    await attempt(best.targetPerSec / 2);
  }
  return steps;
}
