/**
 * Every setting of `npm run bench:fanout`, read once from the environment (defaults in brackets;
 * a bad value stops the run naming the variable). The quick run (`npm run bench`) sets its own
 * short defaults for these where the environment sets none.
 *
 * The ramps:
 * - BENCH_SECONDS (2): each rate step lasts half of it; the firehose window all of it.
 * - BENCH_SOCKETS (100,1000,10000): socket counts, each a run per server and format.
 * - BENCH_FORMATS (json,proto,deflate): `deflate` is JSON with permessage-deflate.
 * - BENCH_SERVERS (service,baseline,socketio,ceiling).
 * - FANOUT_PEER_FORMATS (json,proto): formats the servers other than the service run.
 * - FANOUT_RAMP_FORMATS (json,proto,deflate): formats whose runs ramp; the others take one step
 *   at the highest rate every ramped run of the same socket count held.
 * - FANOUT_RATE (unset: the ramp): one measured step per run at this many deliveries/s.
 * - FANOUT_START (25000): the first step's deliveries/s, doubled each step.
 * - FANOUT_MAX_STEPS (9), FANOUT_MAX_RATE (200000 updates/s): where a ramp stops at the latest.
 * - FANOUT_HALF_MAX (on): the extra step at exactly half the highest rate held.
 * - FANOUT_P99_MS (50): a step is held only under this publish-to-receive p99.
 * - FANOUT_K (10) markets per socket, of FANOUT_MARKETS (100).
 * - FANOUT_SAMPLED (unset: 1% of the sockets, 20 to 100): sockets that decode every frame.
 * - FANOUT_CYCLE_MS (unset: from the rate): how often the counting clients read.
 * - FANOUT_MEMORY (on): memory per socket and idle CPU after connecting.
 * - BENCH_ATTEMPTS (3): a step disturbed by other processes is measured up to this many times.
 * The firehose (fanout/firehose.ts):
 * - FANOUT_FIREHOSE (on); FANOUT_FIREHOSE_SOCKETS (1000,10000), FANOUT_FIREHOSE_SERVERS
 *   (BENCH_SERVERS), FANOUT_FIREHOSE_FORMATS (json): which ramps it follows.
 * - FANOUT_FIREHOSE_WARM (0.5 s), FANOUT_FIREHOSE_SECONDS (BENCH_SECONDS), BENCH_PIPELINE (64
 *   batches in flight), FANOUT_FIREHOSE_DRAIN_S (30), FANOUT_FIREHOSE_MAX_RSS_MB (4096).
 * - FANOUT_FIREHOSE_BATCH (unset: the paced publisher's batch at the best held rate).
 * - FANOUT_FIREHOSE_PROFILE (off): V8 and perf profiles of the service's window.
 * Mixed subscriptions (fanout/mixed.ts):
 * - FANOUT_MIXED (on), FANOUT_MIXED_SOCKETS (10000), FANOUT_MIXED_SECONDS (2),
 *   FANOUT_MIXED_RATE (unset: half the service's highest held JSON rate at that socket count).
 * Profiles:
 * - BENCH_PROFILE (on); FANOUT_PROFILE_SOCKETS (unset: 1,000 and the largest count),
 *   FANOUT_PROFILE_RATE (unset: half the lowest highest held rate), FANOUT_PROFILE_ONLY (off).
 * - BENCH_RESULTS_NAME (fanout): bench/results/<name>.md and .json.
 * Shared with the other benchmarks (lib/): DATABASE_URL, BENCH_DB, BENCH_QUIET_MS, BENCH_PERF,
 * BENCH_VERBOSE.
 */
import { deepFreeze, envFlag, envList, envNumber, envNumbers } from '../lib/env.js';

export const IMPLS = ['service', 'baseline', 'socketio', 'ceiling'] as const;
export type Impl = (typeof IMPLS)[number];
const FORMATS = ['json', 'proto', 'deflate'] as const;
/** `deflate`: JSON with permessage-deflate (the service with WS_COMPRESSION=on); `mixed`: the profiles' half JSON, half protobuf. */
export type Format = (typeof FORMATS)[number] | 'mixed';

function read() {
  const seconds = envNumber('BENCH_SECONDS', 2);
  const servers = envList('BENCH_SERVERS', IMPLS, IMPLS);
  const start = envNumber('FANOUT_START', 25_000);
  const round = (n: number | undefined) => (n === undefined ? undefined : Math.round(n));
  return {
    stepSeconds: seconds / 2,
    sockets: envNumbers('BENCH_SOCKETS', [100, 1000, 10000]),
    formats: envList<Format>('BENCH_FORMATS', FORMATS, FORMATS),
    servers,
    peerFormats: envList<Format>('FANOUT_PEER_FORMATS', ['json', 'proto'], FORMATS),
    rampFormats: envList<Format>('FANOUT_RAMP_FORMATS', FORMATS, FORMATS),
    fixedRate: envNumber('FANOUT_RATE'),
    start,
    maxSteps: Math.round(envNumber('FANOUT_MAX_STEPS', 9)),
    /** The publisher and ingest stop being about fan-out beyond this many updates per second. */
    maxRate: envNumber('FANOUT_MAX_RATE', 200_000),
    halfMax: envFlag('FANOUT_HALF_MAX', true),
    p99Limit: envNumber('FANOUT_P99_MS', 50),
    marketsPerSocket: Math.round(envNumber('FANOUT_K', 10)),
    markets: Math.round(envNumber('FANOUT_MARKETS', 100)),
    sampled: round(envNumber('FANOUT_SAMPLED')),
    cycleMs: envNumber('FANOUT_CYCLE_MS'),
    memory: envFlag('FANOUT_MEMORY', true),
    attempts: Math.round(envNumber('BENCH_ATTEMPTS', 3)),
    firehose: {
      on: envFlag('FANOUT_FIREHOSE', true),
      sockets: envNumbers('FANOUT_FIREHOSE_SOCKETS', [1000, 10000]),
      servers: envList('FANOUT_FIREHOSE_SERVERS', servers, IMPLS),
      formats: envList<Format>('FANOUT_FIREHOSE_FORMATS', ['json'], FORMATS),
      warmSeconds: envNumber('FANOUT_FIREHOSE_WARM', 0.5),
      seconds: envNumber('FANOUT_FIREHOSE_SECONDS', seconds),
      pipeline: Math.round(envNumber('BENCH_PIPELINE', 64)),
      drainSeconds: envNumber('FANOUT_FIREHOSE_DRAIN_S', 30),
      maxRssBytes: envNumber('FANOUT_FIREHOSE_MAX_RSS_MB', 4096) * 2 ** 20,
      /** Updates per batch; unset, the paced publisher's at the run's best held rate (the updates due per 5 ms tick), so that the firehose differs from that step only in pacing. */
      batch: round(envNumber('FANOUT_FIREHOSE_BATCH')),
      /** Off by default: the profilers would slow the measured window. */
      profile: envFlag('FANOUT_FIREHOSE_PROFILE', false),
    },
    mixed: {
      on: envFlag('FANOUT_MIXED', true),
      sockets: Math.round(envNumber('FANOUT_MIXED_SOCKETS', 10_000)),
      rate: envNumber('FANOUT_MIXED_RATE'),
      seconds: envNumber('FANOUT_MIXED_SECONDS', 2),
    },
    profile: {
      on: envFlag('BENCH_PROFILE', true),
      /** Empty: 1,000 (or the smallest count) and the largest. */
      sockets: envNumbers('FANOUT_PROFILE_SOCKETS', []),
      rate: envNumber('FANOUT_PROFILE_RATE'),
      only: envFlag('FANOUT_PROFILE_ONLY', false),
    },
    resultsName: process.env.BENCH_RESULTS_NAME || 'fanout',
  };
}

export const settings = deepFreeze(read());
export type Settings = typeof settings;

/** Counting sockets per client process. */
export const PER_WORKER = 5000;
/** A step during which other processes used more than this share of a core (%) is measured again. */
export const FOREIGN_LIMIT = 15;
/** The service's firehose rate against its best held rate: the team's target. */
export const FIREHOSE_TARGET = 0.9;
/** Every conflation interval (up to 1 s) has ticked before a mixed-subscriptions window opens. */
export const MIXED_WARM_SECONDS = 1.5;
/** Mixed subscriptions' CPU per frame over plain's: the team's target. */
export const MIXED_TARGET = 1.3;

export const NAMES: Record<Impl, string> = { service: 'service', baseline: 'baseline (ws)', socketio: 'Socket.IO', ceiling: 'ceiling (bare uWS)' };

/** Socket.IO speaks JSON through its default parser only; compression is measured on the service alone. */
export const runs = (impl: Impl, format: Format): boolean =>
  impl === 'service' || (settings.peerFormats.includes(format) && format !== 'deflate' && (impl !== 'socketio' || format === 'json'));

/** Sampled sockets: FANOUT_SAMPLED, or 1% of the sockets, 20 to 100. */
export const sampledFor = (n: number): number => Math.min(n, settings.sampled ?? Math.max(20, Math.min(100, Math.ceil(n / 100))));
