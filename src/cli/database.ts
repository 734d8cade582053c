import type pg from 'pg';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { reachEmbedded, type EmbeddedServer } from '../db/embedded.js';
import { migrate } from '../db/migrate.js';
import { createPool, isUnavailable } from '../db/pool.js';

export interface Database {
  pool: pg.Pool;
  close(): Promise<void>;
}

/**
 * The service's database for a command-line tool: DATABASE_URL; or, when
 * unset, the embedded Postgres that a running service holds on the folder
 * (left running), or one started for the tool's run and stopped by `close`.
 * Migrations are applied first. Throws with a message for the user.
 */
export async function openDatabase(config: Config, log: Logger, tool: string): Promise<Database> {
  let embedded: EmbeddedServer | undefined;
  if (!config.databaseUrl) embedded = await reachEmbedded(config.embeddedPgDir, config.embeddedPgPort, log, `npm run ${tool}`);
  const pool = createPool(config.databaseUrl ?? embedded!.url, config, log);
  const close = async () => {
    await pool.end().catch(() => undefined);
    await embedded?.stop();
  };
  try {
    await migrate(pool, log);
  } catch (e) {
    await close();
    const err = e as Error & { code?: string };
    throw new Error(isUnavailable(e) ? `cannot reach the database: ${err.message || err.code}` : err.message || String(e));
  }
  return { pool, close };
}
