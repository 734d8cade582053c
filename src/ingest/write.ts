import type pg from 'pg';
import { ServiceError, errors, known } from '../errors.js';
import { asDatabaseError, inTransaction } from '../db/pool.js';
import type { Logger } from '../log.js';
import { ApplyError, applyItem, type Outcome } from './apply.js';
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

/**
 * Writes checked reference items in one transaction: all of them or, on the
 * first refused item, none; with a key, only while the key is not revoked.
 * `keys` gathers the read model's keys of the rows written. Errors come out
 * coded: ITEM_REJECTED naming the item, UNAUTHORIZED for a revoked key,
 * DB_UNAVAILABLE when Postgres is unreachable.
 */
export async function writeReference(pool: pg.Pool, items: readonly (readonly [number, ReferenceItem])[], log: Logger, key?: PublisherKey, keys?: Set<string>): Promise<Outcome[]> {
  try {
    // Two batches touching the same rows in opposite orders can deadlock; Postgres aborts one, which is simply tried again.
    return await retry(() => inTransaction(pool, async (client) => {
      if (key) await lockKey(client, key);
      const out: Outcome[] = [];
      for (const [i, item] of items) {
        try {
          out.push(await applyItem(client, item, keys));
        } catch (err) {
          if (err instanceof ApplyError) throw errors.badItem(describeItem(i, item), err.message);
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
