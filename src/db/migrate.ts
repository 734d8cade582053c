import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import type { Logger } from '../log.js';
import type { Component } from '../lib/component.js';
import { transaction, withClient } from './pool.js';

const SQL_DIR = fileURLToPath(new URL('../../../sql/', import.meta.url));
// Any constant shared by every pod of this service: pods starting together
// queue on it, and the second finds the work done.
const LOCK_KEY = 7_406_101;

/**
 * Applies sql/NNN_name.sql files in order, each in its own transaction and
 * recorded in schema_migrations, under an advisory lock held on one session.
 */
export async function migrate(pool: pg.Pool, log: Logger, dir = SQL_DIR): Promise<string[]> {
  const files = (await readdir(dir)).filter((f) => /^\d+_.+\.sql$/.test(f)).sort();
  const applied: string[] = [];
  await withClient(pool, async (client) => {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    try {
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
      const done = new Set((await client.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name));
      for (const file of files.filter((f) => !done.has(f))) {
        await applyFile(client, dir, file);
        applied.push(file);
        log.info('migration applied', { file });
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => undefined);
    }
  });
  return applied;
}

async function applyFile(client: pg.PoolClient, dir: string, file: string): Promise<void> {
  const sql = await readFile(`${dir}${file}`, 'utf8');
  try {
    await transaction(client, async () => {
      await client.query(sql);
      await client.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
    });
  } catch (err) {
    throw new Error(`migration ${file} failed: ${(err as Error).message}`);
  }
}

/** The schema brought up to date once Postgres answers, before anything reads it. */
export class Migrations implements Component {
  readonly name = 'migrations';

  constructor(
    private readonly pool: pg.Pool,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    await migrate(this.pool, this.log);
  }

  stop(): void {}
}
