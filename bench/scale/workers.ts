/**
 * bench:scale's counting clients: raw-client.ts processes, each with its own share of the
 * sockets and of the 60 source addresses, asked the same thing at once. Each connects to one of
 * the pod's shards (worker i to shard i mod shards), as a load balancer spreads them. Silent ones
 * run in a network namespace (lib/netns.ts) whose network can go away without a word to the
 * server; the others on loopback.
 */
import { Child } from '../fanout/child.js';
import { askNewest } from '../fanout/newest.js';
import type { Newest, Subscribe } from '../fanout/raw-client.js';
import { log, sleep } from '../lib/run.js';
import { Histogram } from '../lib/statistics.js';
import { Netns, type NetPath } from '../lib/netns.js';

/**
 * 60 source addresses, as many as a namespace path holds (a /26): at 50,000 sockets that is about
 * 830 a source, so a storm spread over a second stays under the per-source handshake limit
 * (WS_HANDSHAKES_PER_SOURCE, 1,000 a second), as real clients from their own addresses would.
 */
const SOURCES = 60;
const LOOPBACK: NetPath = { host: '127.0.0.1', clients: Array.from({ length: SOURCES }, (_, i) => `127.0.0.${2 + i}`) };

/** A namespace with two paths (the second for after a cut), or none where this user may not make one. */
function namespace(): Netns | undefined {
  try {
    return Netns.open(2, LOOPBACK.clients.length);
  } catch (err) {
    log(`no network namespace (${(err as Error).message.split('\n')[0]}): clients on loopback, where a cut is heard at once`);
    return undefined;
  }
}

export interface RawCounts {
  odds: number;
  acks: number;
  bytes: number;
  /** Handshakes refused with Retry-After and retried, by status line, since the start. */
  refused: Record<string, number>;
}

export class Workers {
  private readonly children: Child[];
  private readonly netns: Netns | undefined;
  /** The namespace's path in use: each cut moves to the next. */
  private path = 0;

  /**
   * `sio-client.js` for the Socket.IO peer (it takes each request's `mids`). `silent`: in a
   * namespace, for `cut`; the server must then listen on every address (HOST 0.0.0.0).
   */
  constructor(readonly n: number, count: number, script = 'raw-client.js', silent = false) {
    this.netns = silent ? namespace() : undefined;
    this.children = Array.from({ length: count }, () => Child.start(script, 10, this.netns?.exec));
  }

  private get route(): NetPath {
    return this.netns?.paths[this.path] ?? LOOPBACK;
  }

  /**
   * The clients' network goes away in silence: every packet on their path is lost from now on, so
   * the server hears no close, FIN or RST; `resume` then takes the next path, as a client's new
   * network. False where the clients are on loopback: there `resume` cuts their sockets itself
   * and the server hears at once.
   */
  cut(): boolean {
    if (!this.netns || this.path + 1 >= this.netns.paths.length) return false;
    this.netns.cut(this.path++);
    return true;
  }

  get pids(): number[] {
    return this.children.map((c) => c.proc.pid!);
  }

  private addresses(wi: number): string[] {
    return this.route.clients.filter((_, k) => k % this.children.length === wi);
  }

  async counts(): Promise<RawCounts> {
    const cs = await Promise.all(this.children.map((w) => w.ask({ type: 'counts' }, 'counts')));
    const refused: Record<string, number> = {};
    for (const c of cs) for (const [line, k] of Object.entries((c.refused ?? {}) as Record<string, number>)) refused[line] = (refused[line] ?? 0) + k;
    const sum = (k: string) => cs.reduce((a, c) => a + c[k], 0);
    return { odds: sum('odds'), acks: sum('acks'), bytes: sum('bytes'), refused };
  }

  /** Opens the sockets (socket i sends `requests(i)`), worker i's to `ports[i % ports.length]`, and resolves once every accepted one's acks are back. */
  async connect(ports: number[], requests: (i: number) => Subscribe[], timeoutMs = 300_000): Promise<{ ok: number }> {
    const per = Math.ceil(this.n / this.children.length);
    return this.untilAcked(() => Promise.all(this.children.map((w, wi) => w.ask<{ ok: number }>({
      type: 'connect', host: this.route.host, port: ports[wi % ports.length], path: '/ws', protocol: 'odds.v1.json', concurrency: 256, localAddresses: this.addresses(wi),
      sockets: Array.from({ length: Math.max(0, Math.min(per, this.n - wi * per)) }, (_, i) => requests(wi * per + i)),
    }, 'connected', timeoutMs))));
  }

  /** Every socket cut at once and connected again (worker i's to `ports[i % ports.length]`) within a second, resuming with `since` in `epoch`; resolves once all are acked. */
  resume(ports: number[], epoch: string): Promise<{ ok: number }> {
    return this.untilAcked(() => Promise.all(this.children.map((w, wi) => w.ask<{ ok: number }>({
      type: 'resume', host: this.route.host, port: ports[wi % ports.length], epoch, concurrency: 256, spreadMs: 1000, localAddresses: this.addresses(wi),
    }, 'resumed', 300_000))));
  }

  /**
   * The last resume, per socket from its client's start: until its subscription was acked again,
   * and how many TCP connects took a second or more (a SYN dropped from the server's full accept
   * queue, sent again by TCP after 1 s, 3 s, 7 s).
   */
  async resumeTimes(): Promise<{ back: Histogram; synRetried: number }> {
    const all = await Promise.all(this.children.map((c) => c.ask<{ acked: number[]; connects: number[]; slowest: number[][]; loopDelayMs: number[] }>({ type: 'resumeTimes' }, 'resumeTimes')));
    const back = new Histogram();
    for (const a of all) for (const ms of a.acked) back.recordMs(ms);
    const slow = (from: number) => all.reduce((k, a) => k + a.connects.filter((ms) => ms >= from).length, 0);
    log(`resume: TCP connects of 0.9 s or more ${slow(900)}, of 2.9 s or more ${slow(2900)}, of 6.9 s or more ${slow(6900)}; acked p99.9 ${back.pMs(99.9)} ms; client event loop delay p50 · p99 · max ${all.map((a) => a.loopDelayMs.map((x) => x.toFixed(0)).join(' · ')).join(', ')} ms`);
    const slowest = all.flatMap((a) => a.slowest);
    if (slowest.length) log(`resume: the slowest sockets' moments (ms: connect called, connected, handshake answered, acked): ${slowest.slice(0, 10).map((m) => m.join('/')).join(', ')}`);
    return { back, synRetried: slow(900) };
  }

  private async untilAcked(open: () => Promise<{ ok: number }[]>): Promise<{ ok: number }> {
    const a0 = (await this.counts()).acks;
    const ok = (await open()).reduce((a, r) => a + r.ok, 0);
    for (let i = 0; i < 1200 && (await this.counts()).acks - a0 < ok; i++) await sleep(50);
    return { ok };
  }

  async track(on: boolean): Promise<void> {
    await Promise.all(this.children.map((w) => w.ask({ type: 'track', on }, 'tracking')));
  }

  async newest(expected: Record<string, number>): Promise<Newest> {
    return askNewest(this.children, expected);
  }

  async close(): Promise<void> {
    await Promise.all(this.children.map((c) => c.close()));
    this.netns?.close();
  }
}
