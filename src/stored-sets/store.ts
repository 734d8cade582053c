import type pg from 'pg';
import { transaction, withClient } from '../db/pool.js';
import { errors } from '../errors.js';

/**
 * A client's stored market set in Postgres, so every pod, and every socket
 * the client opens later, sees it. Bounded per client; a concluded market is
 * never stored (and leaves every set when it concludes: a trigger does that
 * in the concluding transaction).
 */
export async function addMarkets(pool: pg.Pool, client: string, mids: readonly string[], limit: number): Promise<void> {
  await withClient(pool, (db) => transaction(db, async () => {
    // One change of a client's set at a time, so two requests cannot both pass the limit.
    await db.query('INSERT INTO clients (id) VALUES ($1) ON CONFLICT DO NOTHING', [client]);
    await db.query('SELECT 1 FROM clients WHERE id = $1 FOR UPDATE', [client]);
    const { rows } = await db.query<{ held: number; adding: number }>(
      `WITH wanted AS (SELECT DISTINCT unnest($2::text[]) AS mid)
       SELECT (SELECT count(*) FROM client_markets WHERE client_id = $1)::int AS held,
              (SELECT count(*) FROM wanted w
                WHERE NOT EXISTS (SELECT 1 FROM client_markets c WHERE c.client_id = $1 AND c.mid = w.mid)
                  AND NOT EXISTS (SELECT 1 FROM markets m LEFT JOIN markets p ON p.mid = m.parent_mid
                                   WHERE m.mid = w.mid AND (m.go OR coalesce(p.go, false))))::int AS adding`,
      [client, mids],
    );
    const { held, adding } = rows[0];
    if (held + adding > limit) {
      throw errors.storedSetFull(adding, limit, held);
    }
    await db.query(
      `INSERT INTO client_markets (client_id, mid)
       SELECT $1, w.mid FROM unnest($2::text[]) AS w(mid)
        WHERE NOT EXISTS (SELECT 1 FROM markets m LEFT JOIN markets p ON p.mid = m.parent_mid
                           WHERE m.mid = w.mid AND (m.go OR coalesce(p.go, false)))
       ON CONFLICT DO NOTHING`,
      [client, mids],
    );
  }));
}

export async function removeMarkets(pool: pg.Pool, client: string, mids: readonly string[]): Promise<void> {
  await pool.query('DELETE FROM client_markets WHERE client_id = $1 AND mid = ANY($2)', [client, mids]);
}

/** The stored sets of many clients in one query (a reconnect storm opens thousands of sockets at once); a client with none is absent. */
export async function listMarketsOf(pool: pg.Pool, clients: readonly string[]): Promise<Map<string, string[]>> {
  const { rows } = await pool.query<{ client_id: string; mids: string[] }>(
    'SELECT client_id, array_agg(mid ORDER BY mid) AS mids FROM client_markets WHERE client_id = ANY($1) GROUP BY client_id',
    [clients],
  );
  return new Map(rows.map((r) => [r.client_id, r.mids]));
}
