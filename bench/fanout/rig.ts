/**
 * The first phases of a fan-out run: start the server under test, lay out which sockets take which
 * markets, connect the counting clients and the sampler (each socket subscribed and acked), and
 * read the server's memory per socket. What they set up (the rig) is what every later phase
 * measures with.
 */
import { Inspector } from '../lib/profile.js';
import { type Pinning } from '../lib/cores.js';
import { cpuMicros, rssBytes } from '../lib/proc.js';
import { log, sleep } from '../lib/run.js';
import { startServer, type Server } from '../lib/server.js';
import { Child } from './child.js';
import { Clients } from './clients.js';
import { plainRequests } from './mixed.js';
import type { Market, Publisher } from './publisher.js';
import { PER_WORKER, settings, sampledFor, type Format, type Impl } from './settings.js';

const SCRIPTS: Record<Impl, string> = {
  service: 'dist/src/main.js', baseline: 'dist/bench/baseline/server.js', socketio: 'dist/bench/peers/socketio.js', ceiling: 'dist/bench/ceiling/server.js',
};
/** The service as deployed, less what no fan-out step measures (the simulator, stale feeds, the drain before shutdown). */
export const SERVICE_ENV = {
  PORT: '0', HOST: '127.0.0.1', DEMO_DATA: 'on', SIMULATOR: 'off', LOG_LEVEL: 'warn', LOG_FORMAT: 'json', DRAIN_DELAY_MS: '0',
};
const PROTOCOL: Record<'json' | 'proto' | 'deflate', string> = { json: 'odds.v1.json', proto: 'odds.v1.proto', deflate: 'odds.v1.json' };
const DEFLATE_OFFER = 'permessage-deflate; client_max_window_bits';

/** Start: the server under test on its core, with the inspector (memory after a forced GC, profiles). */
export function startUnderTest(impl: Impl, format: Format, dbUrl: string, pinning: Pinning): Promise<Server> {
  const env: Record<string, string> = impl === 'service'
    ? {
      ...SERVICE_ENV, DATABASE_URL: dbUrl, FEED_STALE_MS: '3600000',
      // Thousands of sockets open at once from a few addresses: the admission limits and the socket
      // cap (derived from the open-file limit, under 10,000 where that is 20,000) are bench:scale's to measure, not this one's.
      WS_HANDSHAKES_PER_SOURCE: '0', WS_HANDSHAKES_PER_SECOND: '0', WS_MAX_SOCKETS: '100000',
      WS_COMPRESSION: format === 'deflate' ? 'on' : 'off',
    }
    : { DATABASE_URL: dbUrl, PORT: '0', BODIES_FILE: '' };
  return startServer({ name: impl, args: [SCRIPTS[impl]], pinning, inspect: true, env });
}

/** Which markets each socket takes, and how many subscribers each market has among the counting and the sampled sockets. */
export interface Layout {
  sampledSets: string[][];
  rawSets: string[][];
  subsRaw: Uint32Array;
  subsSampled: Uint32Array;
  /** Subscribers per market: deliveries/s = updates/s x this. */
  subsPerMarket: number;
  /** Counting sockets per client process. */
  perWorker: number;
}

/** Socket i takes K consecutive markets from i x K on, round the P markets; the first ones are the sampled sockets. */
export function layout(n: number, format: Format, markets: readonly Market[]): Layout {
  const { marketsPerSocket: k, markets: p } = settings;
  const mids = markets.map((m) => m.mid);
  const sets = Array.from({ length: n }, (_, i) => Array.from({ length: k }, (_, j) => mids[(i * k + j) % p]));
  const sampledSets = sets.slice(0, sampledFor(n));
  const rawSets = sets.slice(sampledSets.length);
  const index = new Map(mids.map((m, i) => [m, i]));
  const count = (ss: string[][]) => {
    const subs = new Uint32Array(p);
    for (const s of ss) for (const m of s) subs[index.get(m)!]++;
    return subs;
  };
  // The profiles' half JSON, half protobuf: at least two client processes, one of each.
  const perWorker = format === 'mixed' ? Math.min(PER_WORKER, Math.ceil(rawSets.length / 2)) : PER_WORKER;
  return { sampledSets, rawSets, subsRaw: count(rawSets), subsSampled: count(sampledSets), subsPerMarket: (n * k) / p, perWorker };
}

/** What every phase after connecting measures with. */
export interface Rig {
  impl: Impl;
  format: Format;
  n: number;
  server: Server;
  publisher: Publisher;
  clients: Clients;
  layout: Layout;
  /** The benchmark's own processes, so that other processes' CPU can be told apart. */
  pids(): number[];
  /** The counting clients' read cycle at an update rate. */
  cycleFor(rate: number): number;
}

/** The counting clients niced, so the sampler and publisher get the core when they need it. */
export function startClients(impl: Impl, lay: Layout): Clients {
  const workers = Array.from({ length: Math.ceil(lay.rawSets.length / lay.perWorker) }, () => Child.start(impl === 'socketio' ? 'sio-client.js' : 'raw-client.js', 10));
  return new Clients(workers, Child.start('sampler.js', 0));
}

/** Connect: every socket opened and subscribed, until every subscribe request is acked; returns the seconds it took. */
export async function connect(rig: Rig): Promise<number> {
  const { impl, format, n, server, clients: { workers, sampler }, layout: lay } = rig;
  const t0 = performance.now();
  const host = '127.0.0.1';
  const connected = await Promise.all([
    ...workers.map((w, wi) => {
      const f = format === 'mixed' ? (wi % 2 ? 'proto' : 'json') : format;
      return w.ask({
        type: 'connect', host, port: server.port, path: '/ws', protocol: PROTOCOL[f], sockets: lay.rawSets.slice(wi * lay.perWorker, (wi + 1) * lay.perWorker).map(plainRequests),
        localAddresses: Array.from({ length: 4 }, (_, k) => `127.0.0.${2 + wi * 4 + k}`), concurrency: 64,
        extensions: format === 'deflate' ? DEFLATE_OFFER : undefined,
      }, 'connected');
    }),
    sampler.ask({
      type: 'connect', url: impl === 'socketio' ? server.url : server.url.replace(/^http/, 'ws') + '/ws', protocol: PROTOCOL[format === 'mixed' ? 'json' : format],
      sockets: lay.sampledSets.map(plainRequests), socketio: impl === 'socketio', deflate: format === 'deflate',
    }, 'connected'),
  ]);
  const failed = connected.reduce((a, c) => a + c.failed, 0);
  if (failed) throw new Error(`${failed} of ${n} sockets failed to connect to the ${impl}`);
  const deflating = connected.slice(0, workers.length).reduce((a, c) => a + c.deflating, 0);
  if (format === 'deflate' && deflating < lay.rawSets.length) throw new Error(`the ${impl} accepted permessage-deflate on ${deflating} of ${lay.rawSets.length} sockets`);
  await untilAcked(rig.clients, lay.rawSets.length, lay.sampledSets.length);
  return (performance.now() - t0) / 1000;
}

/** Waits until the counting clients and the sampler have had this many subscribe requests acked (in all). */
export async function untilAcked(clients: Clients, raw: number, sampled: number): Promise<void> {
  for (let i = 0; ; i++) {
    const c = await clients.counts();
    if (c.acks >= raw && c.sampler.acks >= sampled) return;
    if (i > 600) throw new Error(`only ${c.acks + c.sampler.acks} of ${raw + sampled} subscribe requests were acknowledged`);
    await sleep(50);
  }
}

export interface Memory {
  rssBefore: number;
  rssAfter: number;
  heapPerSocketKiB: number;
  idleCpuPct: number;
}

export const NO_MEMORY: Memory = { rssBefore: NaN, rssAfter: NaN, heapPerSocketKiB: NaN, idleCpuPct: NaN };

/**
 * Memory: the server's RSS and JS heap after a full GC (through the inspector, the same for every
 * server), so garbage left by connecting does not count as memory per socket. `before` is taken
 * before connecting, `after` with the sockets connected and subscribed, then idle CPU for a second.
 */
export class MemoryProbe {
  private constructor(private readonly server: Server, private readonly before: { rss: number; heap: number }, private readonly insp: Inspector) {}

  static async before(server: Server): Promise<MemoryProbe> {
    const insp = new Inspector(server.inspector!);
    try {
      return new MemoryProbe(server, await heap(server, insp), insp);
    } catch (err) {
      insp.close();
      throw err;
    }
  }

  async after(n: number): Promise<Memory> {
    try {
      await sleep(500);
      const after = await heap(this.server, this.insp);
      const idle0 = cpuMicros(this.server.pid);
      await sleep(1000);
      return { rssBefore: this.before.rss, rssAfter: after.rss, heapPerSocketKiB: (after.heap - this.before.heap) / n / 1024, idleCpuPct: (cpuMicros(this.server.pid) - idle0) / 1e4 };
    } finally {
      this.insp.close();
    }
  }
}

async function heap(server: Server, insp: Inspector): Promise<{ rss: number; heap: number }> {
  await insp.call('HeapProfiler.collectGarbage');
  await sleep(200);
  const h = await insp.call<{ usedSize: number }>('Runtime.getHeapUsage');
  return { rss: rssBytes(server.pid), heap: h.usedSize };
}

export function logConnected(rig: Rig, seconds: number, memory: Memory | undefined): void {
  const { impl, format, n } = rig;
  log(`${impl} ${format} ${n} sockets: connected in ${seconds.toFixed(1)} s` + (memory
    ? `, ${((memory.rssAfter - memory.rssBefore) / n / 1024).toFixed(2)} KiB/socket (JS heap ${memory.heapPerSocketKiB.toFixed(2)}), idle CPU ${memory.idleCpuPct.toFixed(1)}%` : ''));
}

/** Keeps what waits in the kernel per socket around 16 KB, read at most every 100 ms (or FANOUT_CYCLE_MS). */
export function cycleFor(format: Format): (rate: number) => number {
  const frameBytes = format === 'proto' ? 170 : format === 'deflate' ? 220 : 380;
  return (rate) => {
    if (settings.cycleMs !== undefined) return settings.cycleMs;
    const perSocket = (rate * settings.marketsPerSocket) / settings.markets * frameBytes;
    return Math.max(2, Math.min(100, Math.floor((16_384 / perSocket) * 1000)));
  };
}
