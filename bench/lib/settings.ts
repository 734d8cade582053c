/**
 * The settings every benchmark reads through lib/, once, at start, into one frozen object; each
 * benchmark's own are in its settings object (bench/README.md, Settings). A value that is set
 * but unusable stops the run before anything starts, naming the variable.
 */
import { envFlag, envNumber } from './env.js';

const DB_NAME = /^[a-z_][a-z0-9_]*$/;

function databaseName(): string {
  const name = process.env.BENCH_DB || 'bench';
  if (!DB_NAME.test(name)) throw new Error(`BENCH_DB must be a plain lower-case name, got ${name}`);
  return name;
}

export const SHARED = Object.freeze({
  /** BENCH_QUIET_MS: the longest wait for other processes to quiet down before a measurement. */
  quietMs: envNumber('BENCH_QUIET_MS', 30_000),
  /** BENCH_PERF: Linux perf beside the V8 profiles, when perf is usable. */
  perf: envFlag('BENCH_PERF', true),
  /** BENCH_VERBOSE: echo the servers' output once they listen. */
  verbose: envFlag('BENCH_VERBOSE', false),
  /** BENCH_DB: the database re-created on DATABASE_URL's server. */
  database: databaseName(),
});
