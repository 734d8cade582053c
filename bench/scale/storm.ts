/**
 * bench:scale's reconnect storms. `vanish`: every socket cut with no close frame, all connecting
 * again at once to the same pod with `since`. `restart`: a new pod (as many shards, the same
 * database and bus) is up, every shard of the old one gets SIGTERM (its sockets are told 1001),
 * and every socket connects to the new one with `since` (a new epoch there, so each takes images). The feed keeps running
 * meanwhile; afterwards it stops and every socket is checked against the newest images.
 */
import { readFileSync } from 'node:fs';
import { sleep } from '../lib/common.js';
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
  peakRssMiB: number;
  newest: Newest;
  /** Handshakes refused by the admission limits during the storm (each retried after Retry-After). */
  refused: Record<string, number>;
  /** Connections the kernel dropped because the listen socket's accept queue was full (the client's SYN is retried after 1 s, 3 s, ...). */
  listenDrops: number;
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
}

export async function storm(kind: 'vanish' | 'restart', o: StormSetup): Promise<StormResult> {
  const before = (await o.w.counts()).refused;
  o.feed.start(o.rate);
  let peak = o.next.rssBytes();
  const watch = setInterval(() => (peak = Math.max(peak, o.next.rssBytes())), 50);
  const cpu0 = o.next.cpuMicros();
  const drops0 = listenDrops();
  const t0 = Date.now();
  if (kind === 'restart') await o.server.stop();
  const { ok } = await o.w.resume(o.next.ports, o.epoch);
  const ms = Date.now() - t0;
  const cpuPct = (100 * (o.next.cpuMicros() - cpu0)) / (ms * 1000);
  const dropped = listenDrops() - drops0;
  clearInterval(watch);
  await o.feed.stop();
  await sleep(1000);
  const newest = await o.w.newest((await newestSeqs(o.next.url)).seqs);
  const after = (await o.w.counts()).refused;
  const refused = Object.fromEntries(Object.entries(after).map(([line, k]) => [line, k - (before[line] ?? 0)]).filter(([, k]) => Number(k) > 0));
  return { ms, reconnected: ok, cpuPct, peakRssMiB: peak / 1024 / 1024, newest, refused, listenDrops: dropped };
}
