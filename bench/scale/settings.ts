/**
 * Every setting of `npm run bench:scale`, read once from the environment into one frozen object
 * (defaults in the header of scale.ts and in bench/README.md; a bad value stops the run naming the
 * variable). Those whose default depends on the socket count are kept unset here and resolved by
 * the functions below.
 */
import { envFlag, envNumber, envNumbers } from '../lib/env.js';

const optionalRound = (n: number | undefined) => (n === undefined ? undefined : Math.round(n));

export const SETTINGS = Object.freeze({
  /** BENCH_SOCKETS: the subscriber counts, one run each. */
  sockets: Object.freeze(envNumbers('BENCH_SOCKETS', [10_000, 25_000, 50_000])),
  /** SCALE_RATE: the first step's updates/s over all markets, and the storms' feed (unset: from N). */
  rate: envNumber('SCALE_RATE'),
  steps: Math.round(envNumber('SCALE_STEPS', 6)),
  /** SCALE_SECONDS per step. */
  seconds: envNumber('SCALE_SECONDS', 2),
  /** BENCH_DELTA: every subscribe asks for deltas. */
  delta: envFlag('BENCH_DELTA', false),
  socketio: envFlag('SCALE_SOCKETIO', true),
  attempts: Math.round(envNumber('BENCH_ATTEMPTS', 3)),
  quietMs: envNumber('BENCH_QUIET_MS', 10_000),
  /** SCALE_BUS: measure the bus's cost per image, SCALE_BUS_RATE images/s for SCALE_BUS_SECONDS. */
  bus: envFlag('SCALE_BUS', true),
  busRate: envNumber('SCALE_BUS_RATE', 1000),
  busSeconds: envNumber('SCALE_BUS_SECONDS', 3),
  /** SCALE_SHARDS: service processes per pod (unset: from N). */
  shards: optionalRound(envNumber('SCALE_SHARDS')),
  /** SCALE_WORKERS: client processes (unset: from N). */
  workers: optionalRound(envNumber('SCALE_WORKERS')),
  /** SCALE_PROFILE: a folder where every service process writes a V8 CPU profile (unset: none). */
  profileDir: process.env.SCALE_PROFILE || undefined,
});

/** The first step's rate at N: about 12,500 deliveries/s (each update reaches N / 40 sockets), at most 100 updates/s. */
export const rateFor = (n: number): number => SETTINGS.rate ?? Math.min(100, 500_000 / n);

/**
 * In the silent storm a process holds its live sockets and as many dead ones until its idle
 * timeout, within its 20,000 files: one process up to 10,000 (the two just fit, as measured);
 * beyond, at most 18,000 a process, since at 50,000 over 5 processes (20,000 each with their own
 * files) a process ran out and left new handshakes unanswered for 12 s until dead ones were reaped.
 */
export const shardsFor = (n: number): number => SETTINGS.shards ?? (n <= 10_000 ? 1 : Math.ceil((2 * n) / 18_000));

/**
 * SCALE_WORKERS, by default at least 4 and enough that none holds more than 18,000 sockets (a
 * process may open 20,000 files here), rounded up to a multiple of the shards so each shard gets
 * as many workers as the others.
 */
export function workerCount(n: number, shards: number): number {
  const want = SETTINGS.workers ?? Math.max(4, Math.ceil(n / 18_000));
  return shards * Math.ceil(want / shards);
}
