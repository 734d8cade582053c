import type pg from 'pg';

/**
 * A client's market set, changed by REST subscribe and unsubscribe and kept in
 * Postgres so every pod, and every socket the client opens later, sees it.
 */
export async function addMarkets(pool: pg.Pool, client: string, mids: readonly string[]): Promise<void> {
  await pool.query(
    `INSERT INTO client_markets (client_id, mid) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`,
    [client, mids],
  );
}

export async function removeMarkets(pool: pg.Pool, client: string, mids: readonly string[]): Promise<void> {
  await pool.query('DELETE FROM client_markets WHERE client_id = $1 AND mid = ANY($2)', [client, mids]);
}

export async function listMarkets(pool: pg.Pool, client: string): Promise<string[]> {
  const { rows } = await pool.query<{ mid: string }>('SELECT mid FROM client_markets WHERE client_id = $1 ORDER BY mid', [client]);
  return rows.map((r) => r.mid);
}
