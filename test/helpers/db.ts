import pg from 'pg';
import type { Test } from 'tap';

let counter = 0;

/** The server the suite runs against: DATABASE_URL, set by test/run.ts or CI. */
export function adminUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: run the suite with `npm test`');
  return url;
}

export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = '/' + name;
  return u.toString();
}

/** The environment variable naming the run's migrated template database (set by test/run.ts). */
export const TEMPLATE_ENV = 'TEST_TEMPLATE_DATABASE';

/** A new empty database for one test, dropped when it ends. */
export function freshDatabase(t: Test): Promise<string> {
  return createDatabase(t);
}

/**
 * A new database for one test holding the migrated schema, dropped when it ends: a copy of the
 * run's template, so the migrations run once per run rather than once per file (the service's own
 * migrate at start then finds nothing to do). Empty, as freshDatabase, when run without the template.
 */
export function migratedDatabase(t: Test): Promise<string> {
  return createDatabase(t, process.env[TEMPLATE_ENV]);
}

/** The environment variable naming the run's template that also holds the demo set (test/run.ts). */
export const DEMO_TEMPLATE_ENV = 'TEST_DEMO_TEMPLATE_DATABASE';

/**
 * As migratedDatabase, already holding the demo set as seeded when the run began (the service's
 * DEMO_DATA finds it there and seeds nothing); without the run's templates, the service seeds it.
 */
export function demoDatabase(t: Test): Promise<string> {
  return createDatabase(t, process.env[DEMO_TEMPLATE_ENV] ?? process.env[TEMPLATE_ENV]);
}

async function createDatabase(t: Test, template?: string): Promise<string> {
  const name = `t_${process.pid}_${Date.now().toString(36)}_${counter++}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}${await copyStrategy(admin)}`);
  await admin.end();
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: adminUrl() });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });
  return withDatabase(adminUrl(), name);
}

let strategy: Promise<string> | undefined;

/**
 * FILE_COPY where the server has the choice (Postgres 15 and newer): its default, WAL_LOG, writes
 * the whole template through the write-ahead log, several times the CPU for a schema this small,
 * and the suite makes a database or more per file.
 */
function copyStrategy(admin: pg.Client): Promise<string> {
  strategy ??= admin.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`)
    .then((r) => (Number(r.rows[0].v) >= 150000 ? ' STRATEGY FILE_COPY' : ''));
  return strategy;
}

/** A client on the given database, closed when the test ends. */
export async function sqlClient(t: Test, url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  // The database may be dropped WITH (FORCE) before this ends, killing the connection: expected then.
  c.on('error', () => undefined);
  await c.connect();
  t.teardown(() => c.end());
  return c;
}
