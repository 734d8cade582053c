import type pg from 'pg';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { reachEmbedded, type ReachedServer } from '../db/embedded.js';
import { migrate } from '../db/migrate.js';
import { createPool, isUnavailable } from '../db/pool.js';

export interface Database {
  pool: pg.Pool;
  /** Which database it is, in words: a tool says it before it acts, so a user knows where a key went. */
  where: string;
  close(): Promise<void>;
}

/** DATABASE_URL without its password: user, host, port and database. */
function described(url: string): string {
  try {
    const u = new URL(url);
    return `${u.username ? `${decodeURIComponent(u.username)}@` : ''}${u.host}${u.pathname}`;
  } catch {
    return 'the URL given';
  }
}

/**
 * The service's database for a command-line tool: DATABASE_URL; or, when
 * unset, the embedded Postgres that a running service holds on the folder
 * (left running), or one started for the tool's run and stopped by `close`;
 * with `create` false none is made where there is none. Migrations are
 * applied first. Throws with a message for the user.
 */
export async function openDatabase(config: Config, log: Logger, tool: string, create = true): Promise<Database> {
  let embedded: ReachedServer | undefined;
  if (!config.databaseUrl) embedded = await reachEmbedded(config.embeddedPgDir, config.embeddedPgPort, log, `npm run ${tool}`, create);
  const where = embedded?.where ?? `DATABASE_URL (${described(config.databaseUrl!)})`;
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
  return { pool, where, close };
}
