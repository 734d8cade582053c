import type pg from 'pg';
import { ServiceError, errors, known } from '../errors.js';
import { asDatabaseError, inTransaction } from '../db/pool.js';
import type { Logger } from '../log.js';
import { ApplyError, applyItem, type Outcome } from './apply.js';
import { describe, type ReferenceItem } from './items.js';
import { retry } from '../lib/retry.js';

/** Deadlock detected, serialization failure: the transaction was rolled back and may simply run again. */
const RETRYABLE = new Set(['40P01', '40001']);

/**
 * Writes checked reference items in one transaction: all of them or, on the
 * first refused item, none. Errors come out coded: ITEM_REJECTED naming the
 * item, DB_UNAVAILABLE when Postgres is unreachable.
 */
export async function writeReference(pool: pg.Pool, items: readonly (readonly [number, ReferenceItem])[], log: Logger): Promise<Outcome[]> {
  try {
    // Two batches touching the same rows in opposite orders can deadlock; Postgres aborts one, which is simply tried again.
    return await retry(() => inTransaction(pool, async (client) => {
      const out: Outcome[] = [];
      for (const [i, item] of items) {
        try {
          out.push(await applyItem(client, item));
        } catch (err) {
          if (err instanceof ApplyError) throw errors.badItem(describe(i, item as never), err.message);
          throw err;
        }
      }
      return out;
    }), { attempts: 3, minMs: 10, maxMs: 100, retryIf: (err) => RETRYABLE.has((err as { code?: string }).code ?? '') });
  } catch (err) {
    const e = asDatabaseError(err);
    throw e instanceof ServiceError ? e : known(e, log, 'reference write');
  }
}
