/**
 * The firehose step of the fan-out benchmark: the publisher pipelines batches on `/ingest` as
 * fast as the server acks them, keeping a fixed number in flight, far faster than the sockets can
 * take. After a warm-in (buffers fill, slow sockets fall behind), one window is measured while the
 * firehose still runs: frames the clients received whole, the server's CPU and write system
 * calls, the publisher's acks, and the sampled sockets' latency. Then the publisher stops, the
 * backlog drains, and the newest check asks every socket whether its last frame of each of its
 * markets carries the newest `seq` the server accepted: a server may skip frames for a socket
 * that cannot keep up, but it must not leave it on an old image once the feed plateaus.
 */
import { coreBusyPct, coreTimes, cpuMicros, rssBytes } from '../lib/proc.js';
import { Noise } from '../lib/quiet.js';
import { sleep } from '../lib/run.js';
import { Histogram } from '../lib/statistics.js';
import { perfAvailable, perfCountSends } from '../lib/perf.js';
import { loadCpu, type Clients, type Counts } from './clients.js';
import type { Publisher } from './publisher.js';
import type { Newest } from './raw-client.js';

export interface FirehoseSettings {
  /** Seconds of firehose before the window opens. */
  warmSeconds: number;
  /** The measured window, seconds. */
  seconds: number;
  /** Batches kept in flight (BENCH_PIPELINE). */
  pipeline: number;
  /** Updates per batch. */
  batch: number;
  /** Longest wait for the backlog to drain after the firehose stops, seconds. */
  drainSeconds: number;
  /** The firehose stops early when the server's resident memory passes this (a server that buffers without bound). */
  maxRssBytes: number;
  /** The clients' read cycle, ms (how long a drained count must stay still). */
  cycleMs: number;
}

export interface FirehoseTarget {
  publisher: Publisher;
  clients: Clients;
  /** Subscribers of each market (the publisher's order), to tell what share of the accepted updates' frames was delivered. */
  subscribers: Uint32Array;
  /** The server's own process: its CPU, memory and write system calls are read; absent when it runs in this process. */
  serverPid?: number;
  /** The benchmark's processes, so that other processes' CPU can be told apart. */
  pids?: () => number[];
  /** Called as the measured window opens and closes (profilers). */
  window?: { open(seconds: number): Promise<void>; close(): Promise<void> };
}

export interface FirehoseResult {
  seconds: number;
  /** Frames the clients received whole during the window. */
  delivered: number;
  deliveriesPerSec: number;
  /** Frames received from the first batch until the backlog drained. */
  deliveredTotal: number;
  /** Of the frames the firehose's accepted updates would make (updates x subscribers), the share delivered once drained; the rest were skipped. */
  deliveredShare: number;
  cpuNsPerDelivery: number;
  serverBusyPct: number;
  clientBusyPct: number;
  core0Pct: number;
  core1Pct: number;
  foreignPct: number;
  /** Socket-write system calls of the server during the window (perf stat), and frames per call; null when not counted. */
  writes: number | null;
  framesPerWrite: number | null;
  /** Batches acked during the window: accepted (status 1) and refused (status 0, past INGEST_MAX_IN_FLIGHT or otherwise). */
  acks: number;
  refused: number;
  lastRefusal: string;
  acksPerSec: number;
  updatesAcceptedPerSec: number;
  ackMeanMs: number;
  ackP99Ms: number;
  /** Publish-to-receive latency of the sampled sockets' frames during the window. */
  p50: number;
  p99: number;
  samples: number;
  /** Sampled frames marked `con` (after a slow consumer's skip), and seq gaps without it. */
  sampledCon: number;
  sampledLost: number;
  rssMiB: number;
  /** The firehose was cut short at the memory limit. */
  rssLimitHit: boolean;
  drainSeconds: number;
  drained: boolean;
  closed: number;
  newest: Newest;
}

export async function firehose(t: FirehoseTarget, set: FirehoseSettings): Promise<FirehoseResult> {
  const { publisher: pub, clients, serverPid } = t;
  const pids = t.pids ?? (() => []);
  await clients.track(true);
  const start = await clients.counts();
  const acceptedAtStart = Uint32Array.from(pub.accepted);
  const stopPublisher = pub.firehose(set.pipeline, set.batch);
  let rssLimitHit = false;
  let rss = NaN;
  const guard = serverPid === undefined ? undefined : setInterval(() => {
    rss = rssBytes(serverPid);
    if (rss > set.maxRssBytes) {
      rssLimitHit = true;
      stopPublisher();
    }
  }, 100);
  try {
    await sleepUnless(set.warmSeconds * 1000, () => rssLimitHit);

    await t.window?.open(set.seconds);
    await clients.sampler.ask({ type: 'reset' }, 'reset');
    pub.ackLatency.reset();
    const c0 = await clients.counts();
    const acked0 = pub.acked;
    const refused0 = pub.refused;
    const self0 = process.cpuUsage();
    const cpu0 = serverPid === undefined ? NaN : cpuMicros(serverPid);
    const cores0 = coreTimes();
    const noise = new Noise(pids);
    const w0 = performance.now();
    const writesCount = serverPid !== undefined && perfAvailable() ? perfCountSends(serverPid, set.seconds) : undefined;
    await sleepUnless(set.seconds * 1000, () => rssLimitHit);
    const c1 = await clients.counts();
    const wall = (performance.now() - w0) / 1000;
    await t.window?.close();
    const cpu = serverPid === undefined ? NaN : cpuMicros(serverPid) - cpu0;
    const cores = coreBusyPct(cores0, coreTimes());
    const foreignPct = noise.foreignPct();
    const self = process.cpuUsage(self0);
    const acks = pub.acked - acked0;
    const refused = pub.refused - refused0;
    const ackMeanMs = pub.ackLatency.count ? pub.ackLatency.sum / pub.ackLatency.count / 1000 : NaN;
    const ackP99Ms = pub.ackLatency.pMs(99);
    stopPublisher();
    // perf counts for the whole window even when the memory limit cut it short; then its count is not the window's.
    const writes = writesCount ? (await writesCount) ?? null : null;

    const d0 = performance.now();
    await pub.idle(set.drainSeconds * 1000);
    if (pub.closedBecause) throw new Error(`the server's ingest socket ${pub.closedBecause} during the firehose`);
    const { end, drained } = await untilStill(clients, set, d0);
    const drainSeconds = (performance.now() - d0) / 1000;
    const newest = await clients.newest(pub.newest());
    let acceptedFrames = 0;
    for (let m = 0; m < acceptedAtStart.length; m++) acceptedFrames += (pub.accepted[m] - acceptedAtStart[m]) * t.subscribers[m];

    const delivered = c1.total - c0.total;
    const hist = Histogram.from(c1.sampler.fromTs);
    return {
      seconds: wall, delivered, deliveriesPerSec: delivered / wall, deliveredTotal: end.total - start.total,
      deliveredShare: acceptedFrames ? (end.total - start.total) / acceptedFrames : NaN,
      cpuNsPerDelivery: (cpu * 1000) / Math.max(1, delivered), serverBusyPct: cpu / wall / 1e4,
      clientBusyPct: loadCpu(self, c0, c1) / wall / 1e4,
      core0Pct: cores[0] ?? NaN, core1Pct: cores[1] ?? NaN, foreignPct,
      writes: rssLimitHit ? null : writes, framesPerWrite: writes && !rssLimitHit ? delivered / writes : null,
      acks, refused, lastRefusal: pub.lastRefusal, acksPerSec: (acks + refused) / wall, updatesAcceptedPerSec: (acks * set.batch) / wall, ackMeanMs, ackP99Ms,
      p50: hist.pMs(50), p99: hist.pMs(99), samples: hist.count, sampledCon: c1.sampler.conflated, sampledLost: c1.sampler.lost,
      rssMiB: rss / 2 ** 20, rssLimitHit, drainSeconds, drained,
      closed: end.closed + end.sampler.closed - start.closed - start.sampler.closed, newest,
    };
  } finally {
    clearInterval(guard);
    stopPublisher();
    await clients.track(false);
  }
}

async function sleepUnless(ms: number, stop: () => boolean): Promise<void> {
  const until = performance.now() + ms;
  while (!stop() && performance.now() < until) await sleep(Math.min(50, Math.max(1, until - performance.now())));
}

/** Waits until no frame has arrived for a while (longer than a read cycle), or the drain limit passes. */
async function untilStill(clients: Clients, set: FirehoseSettings, from: number): Promise<{ end: Counts; drained: boolean }> {
  const quietMs = Math.max(500, 3 * set.cycleMs);
  let end = await clients.counts();
  for (;;) {
    await sleep(quietMs);
    const next = await clients.counts();
    if (next.total === end.total) return { end: next, drained: true };
    end = next;
    if (performance.now() - from > set.drainSeconds * 1000) return { end, drained: false };
  }
}
