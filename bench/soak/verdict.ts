/**
 * The soak run's verdict: the checks that decide pass or fail, from the samples taken during the
 * run and what was seen at its end. The thresholds are in settings.ts; the header of soak.ts says
 * why each is what it is.
 */
import { median } from '../lib/statistics.js';
import { SETTINGS } from './settings.js';
import type { ServiceProcess } from './service.js';
import type { Pool } from './subscribers.js';
import { fmt, slope, type Problems } from './util.js';

export interface Sample {
  t: number;
  rssMB: number;
  rssPromMB: number;
  /** Smallest heap-used seen in this sample's window (probes every 2 s and this scrape). */
  heapFloorMB: number;
  heapMB: number;
  sockets: { json: number; proto: number };
  held: { json: number; proto: number };
  subscriptions: number;
  expectedSubscriptions: number;
  /** Matched after waiting this long (NaN: never within 3 s). */
  settledMs: number;
  fds: number;
  socketFds: number;
  /** Socket fds minus WebSocket connections: keep-alive HTTP, Postgres, the publisher socket, listen socket. */
  otherSockets: number;
  requests: number;
  reqPerS: number;
  fiveXX: number;
  delivered: number;
  deliveredPerS: number;
  clientFramesPerS: number;
  imagesPerS: number;
  framesSkipped: number;
  slowCloses: number;
}

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

/** Everything the run saw that the checks judge. */
export interface Outcome {
  samples: Sample[];
  /** The gauges after the load stopped and most sockets were closed; empty when not reached. */
  final: Record<string, unknown>;
  /** What the service did on SIGTERM; empty when not reached. */
  shutdown: Record<string, unknown>;
  subscriptionChecks: { windows: number; failed: number };
  pool: Pool | undefined;
  svc: ServiceProcess | undefined;
  /** 5xx answers the load generator saw. */
  clientFiveXX: number;
  diedAt: number | undefined;
  interrupted: boolean;
  problems: Problems;
}

export function verdict(o: Outcome): Check[] {
  const post = o.samples.filter((s) => s.t >= SETTINGS.warmupS);
  return [
    memory('RSS', post, (s) => s.rssMB),
    memory('heap', post, (s) => s.heapFloorMB),
    ...gauges(o),
    ...otherSockets(post),
    ...lifecycle(o),
  ];
}

/** Sustained growth (the slope over the whole stretch and both halves) and a large one (the end over the minimum). */
function memory(name: string, post: Sample[], pick: (s: Sample) => number): Check {
  const { warmupS, memSlopeMBPerMin: bound, memGrowthRatio } = SETTINGS;
  if (post.length < 4) return { name, ok: true, detail: `not judged: ${post.length} samples after the ${warmupS} s warm-up (need 4)` };
  const ts = post.map((s) => s.t / 60);
  const ys = post.map(pick);
  const h = Math.floor(ys.length / 2);
  const k = slope(ts, ys);
  const k1 = slope(ts.slice(0, h), ys.slice(0, h));
  const k2 = slope(ts.slice(h), ys.slice(h));
  const min = Math.min(...ys);
  const end = median(ys.slice(-3));
  const sustained = k > bound && k1 > bound && k2 > bound;
  return {
    name, ok: !(sustained && end > memGrowthRatio * min),
    detail: `slope ${fmt(k, 2)} MB/min (halves ${fmt(k1, 1)}, ${fmt(k2, 1)}; bound ${bound} on all three); end ${fmt(end, 1)} MB = ${fmt(end / min, 2)}x the post-warm-up minimum ${fmt(min, 1)} MB (bound ${memGrowthRatio}x); ${post.length} samples from ${post[0].t} s`,
  };
}

const maxDiff = (xs: Sample[], f: (s: Sample) => number) => xs.reduce((m, s) => Math.max(m, Math.abs(f(s))), 0);

/** The socket and subscription gauges against what the load held, at every sample and at the end. */
function gauges({ samples, final, pool, subscriptionChecks }: Outcome): Check[] {
  const socketMiss = samples.filter((s) => s.sockets.json !== s.held.json || s.sockets.proto !== s.held.proto);
  const subMiss = samples.filter((s) => s.subscriptions !== s.expectedSubscriptions);
  return [{
    name: 'sockets', ok: samples.length > 0 && socketMiss.length === 0 && (!('held' in final) || final.sockets === final.held),
    detail: `gauge = held at ${samples.length - socketMiss.length}/${samples.length} samples (max diff ${maxDiff(socketMiss, (s) => s.sockets.json + s.sockets.proto - s.held.json - s.held.proto)}); at the end ${final.sockets ?? '-'} open for ${final.held ?? '-'} held; ${pool?.opened ?? 0} opened, ${(pool?.closedByUs ?? 0) + (pool?.terminatedByUs ?? 0)} closed by the load (${pool?.terminatedByUs ?? 0} without handshake)`,
  }, {
    name: 'subscriptions', ok: samples.length > 0 && subMiss.length === 0 && final.subscriptions === final.expectedSubscriptions && subscriptionChecks.failed === 0,
    detail: `gauge = expected at ${samples.length - subMiss.length}/${samples.length} samples (max diff ${maxDiff(subMiss, (s) => s.subscriptions - s.expectedSubscriptions)}); at the end ${final.subscriptions ?? '-'} for ${final.expectedSubscriptions ?? '-'}; REST subscribe reached every socket in ${subscriptionChecks.windows - subscriptionChecks.failed}/${subscriptionChecks.windows} windows`,
  }];
}

function otherSockets(post: Sample[]): Check[] {
  if (post.length < 2) return [];
  const bound = SETTINGS.otherSocketsGrowth;
  const others = post.map((s) => s.otherSockets);
  const grew = others[others.length - 1] - Math.min(...others);
  return [{ name: 'other sockets', ok: grew <= bound, detail: `socket fds beside WebSockets ${Math.min(...others)} to ${Math.max(...others)}, last ${others[others.length - 1]} (bound: +${bound} over the minimum)` }];
}

/** No 5xx, the service alive until SIGTERM and stopping cleanly, nothing logged as an error, no load problem, frames in order. */
function lifecycle(o: Outcome): Check[] {
  const { samples, final, shutdown, svc, diedAt, interrupted, problems } = o;
  const server5xx = Math.max(samples.at(-1)?.fiveXX ?? 0, Number(final.fiveXX ?? 0));
  const codes = shutdown.closeCodes;
  const checks: Check[] = [
    { name: '5xx', ok: server5xx === 0 && o.clientFiveXX === 0, detail: `${server5xx} in odds_http_requests_total, ${o.clientFiveXX} seen by the load` },
    {
      name: 'service alive', ok: diedAt === undefined && !interrupted,
      detail: diedAt !== undefined ? `exited at ${fmt(diedAt)} s: ${JSON.stringify(svc?.exit)}` : interrupted ? 'run interrupted' : 'ran until the end',
    },
    {
      name: 'shutdown', ok: shutdown.code === 0 && shutdown.killed === false && Array.isArray(codes) && codes.every((c) => c === 1001),
      detail: !('closeCodes' in shutdown)
        ? `not reached (${svc?.exit ? `the service was already gone: ${svc.exit.code ?? svc.exit.signal}` : 'the run failed first'})`
        : `SIGTERM: exit ${shutdown.code ?? shutdown.signal} after ${shutdown.ms} ms${shutdown.killed ? ' (SIGKILLed)' : ''}; ${shutdown.sockets} sockets closed with ${Array.isArray(codes) ? [...new Set(codes)].join(',') || '-' : codes}`,
    },
    { name: 'error logs', ok: (svc?.logs.error ?? 0) === 0, detail: `${svc?.logs.error ?? 0} errors, ${svc?.logs.warn ?? 0} warnings logged by the service` },
    { name: 'load problems', ok: problems.total === 0, detail: problems.total === 0 ? 'none' : [...problems.counts].map(([k, v]) => `${k}: ${v}`).join('; ') },
  ];
  const stats = o.pool?.stats;
  if (stats) {
    checks.push({
      name: 'frame order', ok: stats.seqGaps === 0 && stats.seqBack === 0,
      detail: `protobuf sockets: ${stats.seqGaps} odds frames missing without con:true, ${stats.seqBack} older than their predecessor (${stats.conflated} conflated, ${stats.dupImages} repeated images)`,
    });
  }
  return checks;
}
