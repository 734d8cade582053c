import type pg from 'pg';
import { retry } from '../lib/retry.js';

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

const CACHE_MS = 2000;
const RETRIES = 4;

/**
 * Client market sets as new sockets need them. In a reconnect storm thousands
 * of sockets of one client open at once: they share one query (and its answer
 * for a moment), and a query that fails is retried, so no socket silently
 * starts without its markets. REST changes drop the client's cached answer.
 */
export class StoredSets {
  private cache = new Map<string, { at: number; mids: Promise<string[]> }>();

  constructor(private readonly pool: pg.Pool) {}

  get(client: string): Promise<string[]> {
    const hit = this.cache.get(client);
    if (hit && Date.now() - hit.at < CACHE_MS) return hit.mids;
    const mids = this.load(client);
    this.cache.set(client, { at: Date.now(), mids });
    mids.catch(() => this.cache.delete(client));
    return mids;
  }

  invalidate(client: string): void {
    this.cache.delete(client);
  }

  private load(client: string): Promise<string[]> {
    return retry(() => listMarkets(this.pool, client), { attempts: RETRIES + 1 });
  }
}
