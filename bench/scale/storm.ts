/**
 * bench:scale's reconnect storms. `vanish`: the clients' network goes away in silence (their path
 * out of a network namespace goes dead; workers.ts) and all connect again at once over a new one
 * to the same pod with `since`; the pod hears nothing of the old sockets and keeps them until its
 * idle timeout (WS_IDLE_TIMEOUT_S) ends them, which is measured. `restart`: a new pod (as many
 * shards, the same database and bus) is up, every shard of the old one gets SIGTERM (its sockets
 * are told 1001), and every socket connects to the new one with `since` (a new epoch there, so
 * each takes images). The feed keeps running meanwhile; afterwards it stops and every socket is
 * checked against the newest images.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { loadConfig } from '../../src/config.js';
import { cpuMicros } from '../lib/proc.js';
import { sleep } from '../lib/run.js';
import { Histogram } from '../lib/statistics.js';
import type { Child } from '../fanout/child.js';
import type { Newest } from '../fanout/raw-client.js';
import { newestSeqs, type Feed } from './market.js';
import type { Pod } from './pod.js';
import type { Workers } from './workers.js';

export interface StormResult {
  /** From the cut (or SIGTERM) until every socket is subscribed again. */
  ms: number;
  reconnected: number;
  /** The serving pod's CPU meanwhile (all its shards), % of one core, and its peak RSS. */
  cpuPct: number;
  /** The counting clients' CPU meanwhile, % of one core (they have one, the load core). */
  clientCpuPct: number;
  peakRssMiB: number;
  newest: Newest;
  /** Handshakes refused by the admission limits during the storm (each retried after Retry-After). */
  refused: Record<string, number>;
  /** Connections the kernel dropped because the listen socket's accept queue was full (the client's SYN is retried after 1 s, 3 s, ...). */
  listenDrops: number;
  /** Per socket, from its client's reconnect start until it was subscribed again: p50, p90, p99 and the slowest (ms). */
  back: [number, number, number, number];
  /** Sockets whose TCP connect took a second or more: a dropped SYN sent again. */
  synRetried: number;
  /** `vanish` only: whether the server heard nothing of the drop (clients in a namespace; not on loopback). */
  silent?: boolean;
  /** `vanish` in silence: until the server had closed the dead sockets, with the feed running. */
  reap?: Reap;
  /** Sockets that stayed connected through the storm (`served`): what they were sent meanwhile. */
  served?: Served;
}

export interface Served {
  frames: number;
  /** Publish to receive, as the rate steps' p50 and p99 (their calm figures). */
  p50: number;
  p99: number;
  lost: number;
}

export interface Reap {
  /** From the cut until the server's open sockets were back to the live ones. */
  ms: number;
  /** Most sockets it held beyond the live ones meanwhile (dead ones not yet reaped). */
  peakDead: number;
  /** Its RSS before the cut and at its peak meanwhile. */
  rssMiB: number;
  peakRssMiB: number;
}

/** Open descriptors of a pod's processes: their sockets, the dead ones they still hold among them, and a few files. */
const fds = (pod: Pod) => pod.pids.reduce((a, pid) => a + readdirSync(`/proc/${pid}/fd`).length, 0);

/**
 * Waits (at most `limitMs`) until the server holds no more descriptors than before the cut, give
 * or take 1% of the sockets: its idle timeout has closed every socket the clients left.
 */
async function reaped(pod: Pod, fds0: number, rss0: number, t0: number, sockets: number, limitMs: number): Promise<Reap> {
  let peakDead = 0;
  let peakRss = rss0;
  for (let extra = Infinity; extra > sockets / 100 && Date.now() - t0 < limitMs; await sleep(250)) {
    extra = fds(pod) - fds0;
    peakDead = Math.max(peakDead, extra);
    peakRss = Math.max(peakRss, pod.rssBytes());
  }
  return { ms: Date.now() - t0, peakDead, rssMiB: rss0 / 1024 / 1024, peakRssMiB: peakRss / 1024 / 1024 };
}

/** TcpExt ListenDrops of the whole machine (loopback: the storm's own, give or take other jobs). */
function listenDrops(): number {
  const lines = readFileSync('/proc/net/netstat', 'utf8').split('\n').filter((l) => l.startsWith('TcpExt:'));
  const [head, values] = lines.map((l) => l.split(/\s+/));
  return Number(values?.[head?.indexOf('ListenDrops') ?? -1] ?? NaN);
}

export interface StormSetup {
  w: Workers;
  feed: Feed;
  rate: number;
  /** Where the sockets are now, and where they resume (the same pod unless restarting). */
  server: Pod;
  next: Pod;
  epoch: string;
  /** The sampled sockets (fanout/sampler.ts), when they stay on `next` throughout: the storm's cost to the sockets it spares. */
  served?: Child;
}

function servedStats(s: { frames: number; lost: number; fromTs: ReturnType<Histogram['toJSON']> }): Served {
  const h = Histogram.from(s.fromTs);
  return { frames: s.frames, p50: h.pMs(50), p99: h.pMs(99), lost: s.lost };
}

export async function storm(kind: 'vanish' | 'restart', o: StormSetup): Promise<StormResult> {
  const before = (await o.w.counts()).refused;
  o.feed.start(o.rate);
  let peak = o.next.rssBytes();
  const watch = setInterval(() => (peak = Math.max(peak, o.next.rssBytes())), 50);
  const cpu0 = o.next.cpuMicros();
  const clientCpu = () => o.w.pids.reduce((a, pid) => a + cpuMicros(pid), 0);
  const clientCpu0 = clientCpu();
  const drops0 = listenDrops();
  const [fds0, rss0] = [fds(o.next), o.next.rssBytes()];
  await o.served?.ask({ type: 'reset' }, 'reset');
  const t0 = Date.now();
  if (kind === 'restart') await o.server.stop();
  const silent = kind === 'vanish' ? o.w.cut() : undefined;
  const { ok } = await o.w.resume(o.next.ports, o.epoch);
  const ms = Date.now() - t0;
  const served = o.served ? servedStats(await o.served.ask({ type: 'stats' }, 'stats')) : undefined;
  const cpuPct = (100 * (o.next.cpuMicros() - cpu0)) / (ms * 1000);
  const clientCpuPct = (100 * (clientCpu() - clientCpu0)) / (ms * 1000);
  const dropped = listenDrops() - drops0;
  clearInterval(watch);
  // A dead socket goes one idle timeout (uWS's timers tick every 4 s) after its last pong; the server inherits this environment.
  const reap = silent ? await reaped(o.next, fds0, rss0, t0, o.w.n, 2 * loadConfig().wsIdleTimeoutS * 1000) : undefined;
  await o.feed.stop();
  await sleep(1000);
  const times = await o.w.resumeTimes();
  const newest = await o.w.newest((await newestSeqs(o.next.url)).seqs);
  const after = (await o.w.counts()).refused;
  const refused = Object.fromEntries(Object.entries(after).map(([line, k]) => [line, k - (before[line] ?? 0)]).filter(([, k]) => Number(k) > 0));
  return {
    ms, reconnected: ok, cpuPct, clientCpuPct, peakRssMiB: peak / 1024 / 1024, newest, refused, listenDrops: dropped, silent, reap, served,
    back: [times.back.pMs(50), times.back.pMs(90), times.back.pMs(99), times.back.max / 1000], synRetried: times.synRetried,
  };
}
