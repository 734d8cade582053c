import type pg from 'pg';
import { ServiceError, errors, known } from '../errors.js';
import { inTransaction, isUnavailable } from '../db/pool.js';
import type { Logger } from '../log.js';
import { ApplyError, applyItem, type Outcome } from './apply.js';
import { describe, type ReferenceItem } from './items.js';

/**
 * Writes checked reference items in one transaction: all of them or, on the
 * first refused item, none. Errors come out coded: ITEM_REJECTED naming the
 * item, DB_UNAVAILABLE when Postgres is unreachable.
 */
export async function writeReference(pool: pg.Pool, items: readonly (readonly [number, ReferenceItem])[], log: Logger): Promise<Outcome[]> {
  try {
    return await inTransaction(pool, async (client) => {
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
    });
  } catch (err) {
    if (err instanceof ServiceError) throw err;
    if (isUnavailable(err)) throw errors.databaseDown();
    throw known(err, log, 'reference write');
  }
}
