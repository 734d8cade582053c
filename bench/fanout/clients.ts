/**
 * The fan-out benchmark's receiving side as one: the counting client processes (raw-client.ts or
 * sio-client.ts) and the sampler (sampler.ts). Sums their counts, and asks all of them the same
 * question (read cycle, more subscribe requests, tracking, the newest check).
 */
import type { Child } from './child.js';
import { askNewest } from './newest.js';
import type { Newest, Subscribe } from './raw-client.js';
import type { Histogram } from '../lib/statistics.js';

export interface SamplerStats {
  frames: number;
  framesTotal: number;
  lost: number;
  conflated: number;
  thinned: number;
  reordered: number;
  acks: number;
  refused: number;
  lastRefusal: string;
  closed: number;
  fromTs: ReturnType<Histogram['toJSON']>;
  fromPt: ReturnType<Histogram['toJSON']>;
  cpu: NodeJS.CpuUsage;
}

export interface Counts {
  /** Odds frames the counting clients received whole. */
  odds: number;
  acks: number;
  closed: number;
  bytes: number;
  /** The counting clients' CPU time, µs. */
  cpu: number;
  sampler: SamplerStats;
  /** Every odds frame received so far, counting and sampled sockets together (the sampler's never reset). */
  total: number;
}

const cpuOf = (c: NodeJS.CpuUsage) => c.user + c.system;

/** CPU µs of the load side between two counts: this process (`self`, since the first count), the counting clients and the sampler. */
export const loadCpu = (self: NodeJS.CpuUsage, c0: Counts, c1: Counts): number => cpuOf(self) + (c1.cpu - c0.cpu) + (cpuOf(c1.sampler.cpu) - cpuOf(c0.sampler.cpu));

export class Clients {
  constructor(readonly workers: Child[], readonly sampler: Child) {}

  get children(): Child[] {
    return [...this.workers, this.sampler];
  }

  async counts(): Promise<Counts> {
    const [cs, sampler] = await Promise.all([
      Promise.all(this.workers.map((w) => w.ask({ type: 'counts' }, 'counts'))),
      this.sampler.ask<SamplerStats>({ type: 'stats' }, 'stats'),
    ]);
    const sum = (k: string) => cs.reduce((a, c) => a + c[k], 0);
    const odds = sum('odds');
    return { odds, acks: sum('acks'), closed: sum('closed'), bytes: sum('bytes'), cpu: cs.reduce((a, c) => a + cpuOf(c.cpu), 0), sampler, total: odds + sampler.framesTotal };
  }

  async cycle(ms: number): Promise<void> {
    await Promise.all(this.workers.map((w) => w.ask({ type: 'cycle', ms }, 'cycled')));
  }

  /** More subscribe requests on the connected sockets: `raw` for the counting clients' sockets in order, `sampled` for the sampler's. */
  async subscribe(raw: Subscribe[][], sampled: Subscribe[][], perWorker: number): Promise<void> {
    await Promise.all([
      ...this.workers.map((w, i) => w.ask({ type: 'subscribe', sockets: raw.slice(i * perWorker, (i + 1) * perWorker) }, 'subscribed')),
      this.sampler.ask({ type: 'subscribe', sockets: sampled }, 'subscribed'),
    ]);
  }

  /** Counting clients read each JSON odds frame's `mid` and `seq` while on (the sampler always does). */
  async track(on: boolean): Promise<void> {
    await Promise.all(this.workers.map((w) => w.ask({ type: 'track', on }, 'tracking')));
  }

  /** Whether every socket's last frame of each of its markets carries the newest `seq`. */
  async newest(expected: Record<string, number>): Promise<Newest> {
    return askNewest(this.children, expected);
  }

  async close(): Promise<void> {
    await Promise.all(this.children.map((c) => c.close()));
  }
}
