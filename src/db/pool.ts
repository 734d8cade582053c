import pg from 'pg';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { ServiceError, errors, isDatabaseError } from '../errors.js';
import type { Component } from '../lib/component.js';
import { retry } from '../lib/retry.js';

// bigint columns hold IDs the REST contract types as integers; every one fits a
// double, and returning strings would leak into the JSON.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));

export function createPool(url: string, config: Config, log: Logger): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: config.pgPoolMax,
    connectionTimeoutMillis: config.pgConnectTimeoutMs,
    statement_timeout: config.pgStatementTimeoutMs,
    query_timeout: config.pgStatementTimeoutMs + 1000,
    idleTimeoutMillis: 30_000,
    application_name: 'odds-service',
  });
  // An idle client dying (Postgres restarted) emits here; without a listener
  // it would be an uncaught 'error' and take the process down.
  pool.on('error', (err) => log.warn('postgres idle client lost', { err: err.message }));
  return pool;
}

/** How long a start waits for Postgres, trying again with capped backoff: a minute or more. */
const START_WAIT = { attempts: 60, minMs: 200, maxMs: 5000 };

/**
 * The pool as a component: started once Postgres answers, waited for with
 * capped backoff since pods may start before their database does; stopped
 * after everything that talks to it.
 */
export class Postgres implements Component {
  readonly name = 'postgres';
  /** A stop while Postgres is still awaited ends the wait: nothing else would end it. */
  private readonly stopping = new AbortController();

  constructor(
    private readonly pool: pg.Pool,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    await retry(() => this.pool.query('SELECT 1'), {
      ...START_WAIT, signal: this.stopping.signal,
      onRetry: (err, attempt) => this.log.warn('postgres not reachable yet', { attempt, err: (err as Error).message }),
    });
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    // Connections closing now are ours closing, not Postgres being lost.
    this.pool.removeAllListeners('error').on('error', () => undefined);
    await this.pool.end();
    this.log.info('shutdown: postgres pool closed');
  }
}

/**
 * A start step that reads or writes Postgres once it has answered (the migrations, the demo
 * seed, the API keys), tried again while Postgres is unreachable, as the pool's start waits for
 * it: a database that restarts during the start (an embedded postmaster that died at once and is
 * started again by its keeper) delays the start rather than failing it. Every other failure fails
 * the start at once. The steps are idempotent: each runs in transactions, or only reads.
 */
export class UntilReachable implements Component {
  readonly name: string;
  private readonly stopping = new AbortController();

  constructor(
    private readonly step: Component,
    private readonly log: Logger,
    private readonly wait: { attempts: number; minMs: number; maxMs: number } = START_WAIT,
  ) {
    this.name = step.name;
  }

  async start(): Promise<void> {
    await retry(async () => this.step.start(), {
      ...this.wait, signal: this.stopping.signal, retryIf: isUnavailable,
      onRetry: (err, attempt) => this.log.warn('postgres not reachable during start; trying again', { step: this.name, attempt, err: (err as Error).message }),
    });
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.step.stop();
  }
}

/** True when the error means Postgres is unreachable rather than that the statement was wrong. */
export function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  if (!e) return false;
  const code = e.code ?? '';
  // A lock waited for past lock_timeout: Postgres answered, another transaction holds the rows.
  if (code === '55P03') return false;
  if (/^(08|57P|53)/.test(code)) return true;
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH'].includes(code)) return true;
  return /timeout|terminat|Connection|ECONNREFUSED/i.test(e.message ?? '');
}

/** Postgres refused the rows themselves (a data exception or a constraint), not the connection: sent again as they are, they fail every time. */
export function isRefusedData(err: unknown): boolean {
  return /^(22|23)/.test((err as { code?: string } | null)?.code ?? '');
}

/**
 * A Postgres failure in the catalogue's words: DB_UNAVAILABLE when Postgres
 * could not answer (never a 400 that blames the caller); catalogue errors and
 * real bugs pass through as they are.
 */
export function asDatabaseError(err: unknown): unknown {
  if (err instanceof ServiceError) return err;
  return isUnavailable(err) ? errors.databaseDown() : err;
}

/**
 * Runs fn with a client of its own. A checked-out client has no error
 * listener from the pool, and Postgres dying between two of fn's queries
 * would otherwise be an uncaught 'error' that takes the process down; here it
 * is kept, the client is destroyed rather than reused, and the caller sees it.
 * So is a client whose query went unanswered: that query still holds the
 * connection, and every later query on it would queue behind it and time out.
 */
export async function withClient<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const held = holdClient(await pool.connect());
  let broken: Error | undefined;
  try {
    return await held.run(fn);
  } catch (err) {
    if (isUnavailable(err) || isDatabaseError(err)) broken = err as Error;
    throw err;
  } finally {
    held.release(broken);
  }
}

export interface HeldClient {
  /** The error the connection was lost with while held, if it was. */
  readonly lost: Error | undefined;
  run<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  /** Back to the pool, or destroyed when it was lost or `broken` says it cannot be reused. */
  release(broken?: Error): void;
}

/**
 * A checked-out client, listened to while it is held: the pool listens for errors on idle clients
 * only, so a connection lost while held (a network cut, an ended backend) would otherwise be an
 * uncaught 'error' that takes the process down. The statement under way fails with it instead.
 */
export function holdClient(client: pg.PoolClient): HeldClient {
  let lost: Error | undefined;
  const onError = (err: Error): void => void (lost = err);
  client.on('error', onError);
  return {
    get lost() {
      return lost;
    },
    run: (fn) => fn(client),
    release(broken) {
      client.off('error', onError);
      client.release(lost ?? broken ?? false);
    },
  };
}

/**
 * Runs fn in one transaction on a client the caller holds. A COMMIT that
 * Postgres never answers leaves the outcome unknown: that is said as such,
 * never as "nothing was changed".
 */
export async function transaction<T>(client: pg.ClientBase, fn: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  let out: T;
  try {
    out = await fn();
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
  try {
    await client.query('COMMIT');
  } catch (err) {
    if (isUnavailable(err)) throw errors.outcomeUnknown();
    throw err;
  }
  return out;
}

/** Runs fn in one transaction on a client of its own; the caller sees it committed, an error, or OUTCOME_UNKNOWN. */
export function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return withClient(pool, (client) => transaction(client, () => fn(client)));
}
