/**
 * Mixed subscriptions, the way betting sites subscribe: lists of markets at the best price only,
 * a few ladder levels on a coupon, the full ladder on the market a user has open; some views
 * conflated to a few frames a second. Each socket splits its markets over two subscribe requests,
 * and the requests of all sockets take the nine mixes of depth (all, 1, 3) and conflation (0,
 * 250, 1000 ms) in turn. The step measures the service with plain subscriptions (every level,
 * every update), then the same sockets re-subscribe mixed (a later subscribe of a market replaces
 * its depth and conflation) and the same publish rate runs again: CPU per frame delivered, both
 * times. Conflated sockets get fewer frames by design, so CPU is divided by the frames actually
 * delivered, not by what plain subscriptions would have received.
 */
import { coreBusyPct, coreTimes, cpuMicros } from '../lib/proc.js';
import { Noise } from '../lib/quiet.js';
import { sleep } from '../lib/run.js';
import { Histogram } from '../lib/statistics.js';
import type { Clients } from './clients.js';
import type { Publisher } from './publisher.js';
import type { Subscribe } from './raw-client.js';

export const DEPTHS = [0, 1, 3] as const;
export const CONFLATE_MS = [0, 250, 1000] as const;
const MIXES = CONFLATE_MS.flatMap((conflate) => DEPTHS.map((depth) => ({ depth, conflate })));

/** A socket's markets in one plain request. */
export const plainRequests = (mids: string[]): Subscribe[] => [{ mids }];

/** A socket's markets in two requests, the `socket`-th pair of the nine mixes (depth 0 and conflation 0 are left out, as a client would). */
export function mixedRequests(mids: string[], socket: number): Subscribe[] {
  const half = Math.ceil(mids.length / 2);
  return [mids.slice(0, half), mids.slice(half)].filter((m) => m.length).map((part, k) => {
    const { depth, conflate } = MIXES[(2 * socket + k) % MIXES.length];
    return { mids: part, ...(depth ? { depth } : {}), ...(conflate ? { conflate } : {}) };
  });
}

export interface WindowResult {
  /** Update rate published, per second. */
  rate: number;
  seconds: number;
  delivered: number;
  deliveriesPerSec: number;
  cpuNsPerDelivery: number;
  serverBusyPct: number;
  core0Pct: number;
  core1Pct: number;
  /** CPU used by other processes during the window, % of a core. */
  foreignPct: number;
  p50: number;
  p99: number;
  samples: number;
}

/**
 * Publishes `rate` updates/s; after `warmSeconds` (every conflation interval has ticked) measures
 * `seconds` of frames received whole and server CPU while publishing goes on.
 */
export async function measureWindow(pub: Publisher, clients: Clients, serverPid: number, pids: () => number[], rate: number, warmSeconds: number, seconds: number): Promise<WindowResult> {
  const run = pub.run(rate, warmSeconds + seconds + 0.2);
  await sleep(warmSeconds * 1000);
  await clients.sampler.ask({ type: 'reset' }, 'reset');
  const c0 = await clients.counts();
  const cpu0 = cpuMicros(serverPid);
  const cores0 = coreTimes();
  const noise = new Noise(pids);
  const w0 = performance.now();
  await sleep(seconds * 1000);
  const c1 = await clients.counts();
  const wall = (performance.now() - w0) / 1000;
  const cpu = cpuMicros(serverPid) - cpu0;
  const cores = coreBusyPct(cores0, coreTimes());
  const foreignPct = noise.foreignPct();
  await run;
  await pub.idle();
  const delivered = c1.total - c0.total;
  const hist = Histogram.from(c1.sampler.fromTs);
  return {
    rate, seconds: wall, delivered, deliveriesPerSec: delivered / wall, cpuNsPerDelivery: (cpu * 1000) / Math.max(1, delivered), serverBusyPct: cpu / wall / 1e4,
    core0Pct: cores[0] ?? NaN, core1Pct: cores[1] ?? NaN, foreignPct, p50: hist.pMs(50), p99: hist.pMs(99), samples: hist.count,
  };
}
