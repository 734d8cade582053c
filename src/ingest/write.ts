import type pg from 'pg';
import { ServiceError, errors, known } from '../errors.js';
import { asDatabaseError, inTransaction } from '../db/pool.js';
import type { Logger } from '../log.js';
import { ApplyError, applyItem, modelKey, type Client, type WriteOutcome } from './apply.js';
import { describeItem, type ReferenceItem } from './items.js';
import { retry } from '../lib/retry.js';

/**
 * The publisher's API key, when keys are in force (the simulator, the demo
 * seed and the import command have none).
 */
export interface PublisherKey {
  readonly id: string;
  /** False once this pod has learned that the key was revoked. */
  live(): boolean;
  /** Postgres showed the key revoked inside a batch's transaction: this pod learns it now, not at the NOTIFY. */
  revoked(): void;
}

/** Deadlock detected, serialization failure: the transaction was rolled back and may simply run again. */
const RETRYABLE = new Set(['40P01', '40001']);
/** Those, or a lock waited for past its bound: rows another transaction writes, never an outage. */
const CONTENDED = new Set([...RETRYABLE, '55P03']);
/** What a reference write waits for another transaction's rows unless told otherwise (PG_LOCK_WAIT_MS). */
export const LOCK_WAIT_MS = 30_000;
/** The advisory lock space of reference rows (the two-number form; migrations use the one-number form). */
const ROW_LOCKS = 7_406_102;
/** The one lock every reference write takes first: shared by a batch that locks its rows, whole by one with too many rows to lock. */
const WRITERS = 7_406_103;
/**
 * Rows a batch locks one by one at most: Postgres's lock table holds about this many locks a
 * transaction (max_locks_per_transaction, 64), shared by every session; a batch of thousands
 * filled it ("out of shared memory", told as an outage, however often it was sent again) and
 * failed other sessions' locks meanwhile. A larger batch takes the writers' lock whole instead.
 */
const MAX_ROW_LOCKS = 64;

/**
 * The read model's keys of every row the items write, as the advisory locks name them: the item's
 * own row, an event's league, a player-race's nested markets (runners go with their market).
 */
function rowKeys(items: readonly (readonly [number, ReferenceItem])[]): string[] {
  const keys: string[] = [];
  for (const [, item] of items) {
    keys.push(modelKey(item));
    if (item.kind === 'event' && item.leagueId !== undefined) keys.push(`league:${item.leagueId}`);
    if (item.kind === 'market') for (const n of item.nested ?? []) keys.push(`market:${n.id}`);
  }
  return keys;
}

/**
 * Locks the rows the batch writes, all at once and in one order (their hashes', whatever the
 * batch's order), before writing any: two batches writing the same rows queue whole, one behind
 * the other, instead of each taking some rows and waiting on the other's (a deadlock). A batch of
 * more rows than `MAX_ROW_LOCKS` takes the writers' lock whole instead, so it waits for every
 * other write and they for it. Any lock waits up to `waitMs`, past the statement timeout (a wait
 * is not an outage), then fails 55P03.
 */
async function lockRows(db: Client, items: readonly (readonly [number, ReferenceItem])[], waitMs: number, statementMs: number): Promise<void> {
  await db.query(`SELECT set_config('lock_timeout', $1, true), set_config('statement_timeout', $2, true)`, [`${waitMs}ms`, statementMs ? `${waitMs + statementMs}ms` : '0']);
  const keys = [...new Set(rowKeys(items))];
  if (keys.length > MAX_ROW_LOCKS) {
    await db.query(`SELECT pg_advisory_xact_lock(${WRITERS}, 0)`);
    return;
  }
  await db.query(`SELECT pg_advisory_xact_lock_shared(${WRITERS}, 0)`);
  await db.query(
    `SELECT count(pg_advisory_xact_lock(${ROW_LOCKS}, h)) FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest($1::text[]) AS k ORDER BY h) AS rows`,
    [keys],
  );
}

/** The transaction's client, every query given the client-side timeout a lock wait needs (the pool's is the statement timeout's). */
function patient(client: pg.PoolClient, ms: number): Client {
  return { query: ((text: string, values?: unknown[]) => client.query({ text, values, query_timeout: ms } as pg.QueryConfig)) as Client['query'] };
}

/**
 * Holds the publisher's key row for the rest of the transaction. FOR SHARE
 * conflicts with the revoking UPDATE's row lock, so the revocation waits for
 * this commit, or this waits for the revocation and then finds the key gone.
 */
async function lockKey(client: pg.PoolClient, key: PublisherKey): Promise<void> {
  const { rowCount } = await client.query('SELECT 1 FROM api_keys WHERE id = $1 AND revoked_at IS NULL FOR SHARE', [key.id]);
  if (rowCount) return;
  key.revoked();
  throw errors.keyRevoked();
}

/** How a reference write is made, beyond its items. */
export interface ReferenceWrite {
  pool: pg.Pool;
  log: Logger;
  /** The publisher's key: the write holds only while it is not revoked. None for the import tool. */
  key?: PublisherKey;
  /** Gathers the read model's keys of the rows written. */
  keys?: Set<string>;
  /** How long rows another transaction is writing are waited for. */
  lockWaitMs?: number;
}

/**
 * Writes checked reference items in one transaction: all of them or, on the
 * first refused item, none. Errors come out coded: ITEM_REJECTED naming the
 * item, UNAUTHORIZED for a revoked key, BUSY when the rows stayed taken
 * (retryable), DB_UNAVAILABLE when Postgres is unreachable.
 */
export async function writeReference(items: readonly (readonly [number, ReferenceItem])[], how: ReferenceWrite): Promise<WriteOutcome[]> {
  const { pool, log, key, keys, lockWaitMs = LOCK_WAIT_MS } = how;
  const statementMs = Number(pool.options.statement_timeout ?? 0);
  try {
    // A deadlock the row locks' order cannot prevent (a trigger's rows) is tried again.
    return await retry(() => inTransaction(pool, async (client) => {
      if (key) await lockKey(client, key);
      const db = patient(client, lockWaitMs + statementMs + 1000);
      await lockRows(db, items, lockWaitMs, statementMs);
      const out: WriteOutcome[] = [];
      for (const [i, item] of items) {
        try {
          out.push(await applyItem(db, item, keys));
        } catch (err) {
          if (err instanceof ApplyError) throw errors.badItem(describeItem(i, item), err.message);
          throw err;
        }
      }
      return out;
    }), { attempts: 3, minMs: 10, maxMs: 100, retryIf: (err) => RETRYABLE.has((err as { code?: string }).code ?? '') });
  } catch (err) {
    if (CONTENDED.has((err as { code?: string }).code ?? '')) throw errors.rowsBusy();
    const e = asDatabaseError(err);
    throw e instanceof ServiceError ? e : known(e, log, 'reference write');
  }
}
