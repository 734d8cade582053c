import type pg from 'pg';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { startEmbedded, type EmbeddedServer } from '../db/embedded.js';
import { migrate } from '../db/migrate.js';
import { createPool, isUnavailable } from '../db/pool.js';

export interface Database {
  pool: pg.Pool;
  close(): Promise<void>;
}

/**
 * The service's database for a command-line tool: DATABASE_URL, or the
 * embedded folder started for the tool's run (so the service must not be
 * running on it). Migrations are applied first. Throws with a message for the user.
 */
export async function openDatabase(config: Config, log: Logger, tool: string): Promise<Database> {
  let embedded: EmbeddedServer | undefined;
  if (!config.databaseUrl) {
    try {
      embedded = await startEmbedded(config.embeddedPgDir, config.embeddedPgPort, log);
    } catch (e) {
      throw new Error(`cannot start the embedded Postgres in ${config.embeddedPgDir}: ${(e as Error).message}\n`
        + `${tool}: is the service running on that folder? Stop it, or set DATABASE_URL to its database.`);
    }
  }
  const pool = createPool(config.databaseUrl ?? embedded!.url, config, log);
  const close = async () => {
    await pool.end().catch(() => undefined);
    await embedded?.stop();
  };
  try {
    await migrate(pool, log);
  } catch (e) {
    await close();
    throw new Error(isUnavailable(e) ? `cannot reach the database: ${(e as Error).message || (e as { code?: string }).code}` : (e as Error).message);
  }
  return { pool, close };
}
