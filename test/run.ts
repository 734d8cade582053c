/**
 * `npm test`: runs the compiled test files against a real Postgres. With DATABASE_URL set (CI, a
 * developer's server) that one is used; otherwise an embedded server is started for the run and
 * stopped after it. Each test file makes its own database on it, so files run in parallel without
 * seeing each other; the migrations are applied once per run to a template those databases copy,
 * and the demo set is seeded once into a second template for the services that start with it.
 *
 *   node dist/test/run.js [--jobs=N] [--cores=N] [--timeout=SECONDS] [--verbose] [file or folder ...]
 *
 * Files are `dist/test/...test.js` or their `test/...test.ts` sources (run compiled); folders run
 * every test file under them; none runs the whole suite.
 */
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join, relative, resolve } from 'node:path';
import pg from 'pg';
import { ConfigError, loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { startEmbedded, type EmbeddedServer } from '../src/db/embedded.js';
import { migrate } from '../src/db/migrate.js';
import { noBuildMessage, uwsBuild } from '../src/http/uws.js';
import { DEMO_TEMPLATE_ENV, TEMPLATE_ENV, withDatabase } from './helpers/db.js';
import { loadDemoIfEmpty } from '../src/demo/load.js';
import { findTestFiles, readDurations, runFiles, writeDurations } from './runner.js';

const ROOT = resolve(new URL('../..', import.meta.url).pathname);
const DIST_TEST = join(ROOT, 'dist', 'test');
// This checkout's own record first: the committed one orders a fresh clone's first run.
const DURATIONS = join(ROOT, '.data', 'test-durations.json');
const SEED_DURATIONS = join(ROOT, 'test', 'durations.json');
/** The image replay sets 10 minutes for itself and hub/storm 14 on a shared machine; no file runs longer. */
const HARD_STOP_MS = 15 * 60_000;

interface Args { jobs: number; cores: number; timeoutS: number; verbose: boolean; paths: string[] }

/**
 * Most files wait far more than they compute, so four per core run side by side, packed by their
 * recorded CPU within the machine's cores (runner.ts).
 */
function parseArgs(argv: readonly string[]): Args {
  const cores = availableParallelism();
  const args: Args = { jobs: 4 * cores, cores, timeoutS: 300, verbose: false, paths: [] };
  for (const a of argv) {
    const m = /^--(jobs|cores|timeout)=(\d+)$/.exec(a);
    if (m && Number(m[2]) > 0) args[m[1] === 'timeout' ? 'timeoutS' : (m[1] as 'jobs' | 'cores')] = Number(m[2]);
    else if (a === '--verbose' || a === '-v') args.verbose = true;
    else if (a.startsWith('-')) throw new UsageError(`unknown ${a}; the options are --jobs=N, --cores=N, --timeout=SECONDS and --verbose`);
    else args.paths.push(compiled(a));
  }
  return args;
}

/** `test/x.test.ts` runs as `dist/test/x.test.js`; anything else is taken as given. */
function compiled(path: string): string {
  const rel = relative(ROOT, resolve(path));
  return rel === 'test' || rel.startsWith('test/') ? join(ROOT, 'dist', rel.replace(/\.ts$/, '.js')) : path;
}

class UsageError extends Error {}

/**
 * A compiled test whose source is gone (deleted or renamed since the last build: tsc never removes
 * its output) is not run, so a developer's checkout runs what a fresh clone does.
 */
function hasSource(file: string): boolean {
  const rel = relative(DIST_TEST, file);
  if (rel.startsWith('..')) return true;
  return existsSync(join(ROOT, 'test', rel.replace(/\.js$/, '.ts')));
}

// Every server test would fail alike: say it once, before a database is started for nothing.
if (!uwsBuild.native) {
  process.stderr.write(`npm test: cannot run: ${noBuildMessage()}\n`);
  process.exit(1);
}
let args: Args;
let files: string[];
try {
  args = parseArgs(process.argv.slice(2));
  files = findTestFiles(args.paths.length ? args.paths : [DIST_TEST]).filter(hasSource);
} catch (err) {
  process.stderr.write(`npm test: ${(err as Error).message}\n`);
  process.exit(2);
}
const log = createLogger('info', true, (l) => process.stderr.write(l));
let embedded: EmbeddedServer | undefined;
let dir = '';
if (!process.env.DATABASE_URL) {
  try {
    // A folder per run beside the embedded data folder, so runs side by side
    // (two terminals, CI and a developer) never share a server.
    dir = join(loadConfig().embeddedPgDir, '..', 'test-pg', String(process.pid));
    embedded = await startEmbedded(dir, 0, log, { kind: 'cli', command: 'npm test', stopsOnSignal: true });
    await throwaway(embedded.url);
  } catch (err) {
    process.stderr.write(`${err instanceof ConfigError ? 'configuration error' : 'npm test'}: ${(err as Error).message}\n`);
    process.exit(1);
  }
}
const admin = process.env.DATABASE_URL || embedded!.url;
const template = `odds_template_${process.pid}`;
const demoTemplate = `odds_demo_${process.pid}`;
let code = 1;
try {
  const quiet = createLogger('error', false, (l) => process.stderr.write(l));
  // The migrated schema: each test's database is a copy of it (helpers/db.ts).
  await makeTemplate(admin, template, (pool) => migrate(pool, quiet));
  // With the demo set, seeded by the service's own loader: most test services start with it, and
  // seeding is most of their start. Its start times are relative to the run's start.
  await makeTemplate(admin, demoTemplate, (pool) => loadDemoIfEmpty(pool, quiet), template);
  const durations = readDurations([DURATIONS, SEED_DURATIONS]);
  const result = await runFiles({
    root: ROOT, files, jobs: args.jobs, cores: args.cores, batches: args.cores, timeoutMs: args.timeoutS * 1000, hardStopMs: HARD_STOP_MS, verbose: args.verbose, durations,
    env: { ...process.env, DATABASE_URL: admin, [TEMPLATE_ENV]: template, [DEMO_TEMPLATE_ENV]: demoTemplate },
    write: (text) => process.stdout.write(text),
  });
  writeDurations(DURATIONS, durations, result.files, ROOT);
  code = result.ok ? 0 : 1;
} catch (err) {
  process.stderr.write(`npm test: ${(err as Error).message}\n`);
} finally {
  if (embedded) {
    await embedded.stop();
    await rm(dir, { recursive: true, force: true });
  } else {
    for (const name of [demoTemplate, template]) await dropDatabase(admin, name).catch(() => undefined);
  }
}
process.exit(code);

/**
 * The run's own server keeps nothing past the run, so it skips flushing to disk: a third of the CPU
 * of making a database and of every commit. A killed Postgres still loses nothing (the writes sit
 * in the kernel's cache); only a crash of the machine would, and the run is gone then anyway.
 */
async function throwaway(url: string): Promise<void> {
  await onServer(url, 'ALTER SYSTEM SET fsync = off', 'ALTER SYSTEM SET full_page_writes = off', 'SELECT pg_reload_conf()');
}

/**
 * A template for the run: a copy of `from` (empty when none), filled once, then left with no
 * session on it, since none may stay on a template while it is copied.
 */
async function makeTemplate(url: string, name: string, fill: (pool: pg.Pool) => Promise<unknown>, from?: string): Promise<void> {
  await dropDatabase(url, name);
  await onServer(url, `CREATE DATABASE ${name}${from ? ` TEMPLATE ${from}` : ''}`);
  const pool = new pg.Pool({ connectionString: withDatabase(url, name), max: 1 });
  await fill(pool);
  await pool.end();
}

function dropDatabase(url: string, name: string): Promise<void> {
  return onServer(url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
}

/** Statements run in turn on the server's own database. */
async function onServer(url: string, ...statements: string[]): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    for (const sql of statements) await c.query(sql);
  } finally {
    await c.end();
  }
}
