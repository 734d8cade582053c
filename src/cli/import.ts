/**
 * `npm run import -- FILE...`: loads reference data from JSON files holding
 * what the REST endpoints answer, through the ingest validation and write
 * path, so one service's answers can seed another's database.
 */
import { readFile } from 'node:fs/promises';
import { runsAsTool } from './fresh.js';
import type pg from 'pg';
import { loadConfig } from '../config.js';
import { UsageError, parseCommandLine, refuseStart } from './args.js';
import { openDatabase, type Database } from './database.js';
import { ServiceError } from '../errors.js';
import { itemsFromRest } from '../ingest/from-rest.js';
import { describe, type ReferenceItem } from '../ingest/items.js';
import { validateReference } from '../ingest/validate.js';
import { writeReference } from '../ingest/write.js';
import { createLogger, type Logger } from '../log.js';

const USAGE = `usage: npm run import -- FILE...
  Loads reference data from JSON files, each holding one answer of GET /api/v1/sports,
  /api/v1/sports/events, /api/v1/events/markets or /api/v1/markets/result, or an ingest
  batch {"data": [{"kind": ...}, ...]}. Files may be given in any order.
  Database: DATABASE_URL if set; otherwise the embedded Postgres in EMBEDDED_PG_DIR
  (default .data/pg): the one the running service holds, or, with no service running,
  one started for the import and stopped after it.
  Exit status: 0 all imported, 1 items rejected or the database failed, 2 bad usage or file.`;

const BATCH = 500;
const PROGRESS_OVER = 1000;
const MAX_REASONS = 20;
/** Parents before children, so one run can load a whole service's answers. */
const ORDER = ['sport', 'league', 'event', 'market', 'result'];

interface ReadRow { file: string; at: number; raw: Record<string, unknown> }
interface Summary { done: number; inserted: number; updated: number; rejected: string[] }

/** Reads and converts every file before the database is touched, so a bad file changes nothing. */
async function readItems(files: string[]): Promise<ReadRow[]> {
  const out: ReadRow[] = [];
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw new UsageError(`${file} is not valid JSON: ${(err as Error).message}`);
    }
    const converted = itemsFromRest(json);
    if ('error' in converted) throw new UsageError(`${file}: ${converted.error}`);
    converted.items.forEach((raw, at) => out.push({ file, at, raw }));
  }
  const rank = (p: ReadRow) => {
    const i = ORDER.indexOf(p.raw.kind as string);
    return i < 0 ? ORDER.length : i;
  };
  return out.sort((a, b) => rank(a) - rank(b));
}

/**
 * Writes in batches of one transaction each. A refused batch is retried item
 * by item, so only the bad items (and those needing them) are rejected. Any
 * other failure is thrown; `summary` then tells what was committed before it.
 */
async function importItems(
  pool: pg.Pool, pending: ReadRow[], log: Logger, summary: Summary,
  progress: (done: number, total: number) => void, interrupted: () => boolean,
): Promise<void> {
  const count = (outcomes: string[]) => outcomes.forEach((o) => (o === 'inserted' ? summary.inserted++ : summary.updated++));
  for (let start = 0; start < pending.length; start += BATCH) {
    if (interrupted()) throw new Error('interrupted');
    const valid: [ReadRow, ReferenceItem][] = [];
    for (const p of pending.slice(start, start + BATCH)) {
      const checked = p.raw.kind === 'odds' ? { error: 'odds are live prices, not reference data; import skips them' } : validateReference(p.raw);
      if ('error' in checked) summary.rejected.push(`${p.file} ${describe(p.at, p.raw)}: ${checked.error}`);
      else valid.push([p, checked.item]);
    }
    try {
      count(await writeReference(valid.map(([p, item]) => [p.at, item] as const), { pool, log }));
    } catch (err) {
      if (!(err instanceof ServiceError) || err.code !== 'ITEM_REJECTED') throw err;
      for (const [p, item] of valid) {
        try {
          count(await writeReference([[p.at, item]], { pool, log }));
        } catch (one) {
          if (!(one instanceof ServiceError) || one.code !== 'ITEM_REJECTED') throw one;
          summary.rejected.push(`${p.file} ${one.message}`);
        }
      }
    }
    summary.done = Math.min(start + BATCH, pending.length);
    if (pending.length > PROGRESS_OVER) progress(summary.done, pending.length);
  }
}

function summaryText(files: string[], s: Summary): string {
  const lines = [`imported ${files.join(' ')}: ${s.inserted} inserted, ${s.updated} updated, ${s.rejected.length} rejected`];
  for (const why of s.rejected.slice(0, MAX_REASONS)) lines.push(`  ${why}`);
  if (s.rejected.length > MAX_REASONS) lines.push(`  ... and ${s.rejected.length - MAX_REASONS} more`);
  return lines.join('\n') + '\n';
}

function parseFiles(argv: string[]): string[] | 'help' {
  const parsed = parseCommandLine(argv);
  if (parsed.help) return 'help';
  if (parsed.positionals.length === 0) throw new UsageError('give at least one FILE');
  return [...parsed.positionals];
}

async function main(argv: string[]): Promise<number> {
  const err = (line: string) => process.stderr.write(line + '\n');
  let files: string[];
  let pending: ReadRow[];
  let config;
  try {
    const parsed = parseFiles(argv);
    if (parsed === 'help') {
      process.stdout.write(USAGE + '\n');
      return 0;
    }
    files = parsed;
    config = loadConfig();
    pending = await readItems(files);
  } catch (e) {
    return refuseStart('import', USAGE, e);
  }

  const log = createLogger('warn', config.logPretty, (l) => process.stderr.write(l));
  // Stop between batches instead of at once, so a batch is never cut and an embedded Postgres this run started is stopped too.
  let interrupted = false;
  const onSignal = () => (interrupted = true);
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);

  let db: Database;
  try {
    db = await openDatabase(config, log, 'import');
  } catch (e) {
    err(`import: ${(e as Error).message}`);
    return 1;
  }
  err(`import: database: ${db.where}`);
  const summary: Summary = { done: 0, inserted: 0, updated: 0, rejected: [] };
  let code: number;
  try {
    await importItems(db.pool, pending, log, summary, (done, total) => err(`import: ${done}/${total} items`), () => interrupted);
    process.stdout.write(summaryText(files, summary));
    code = summary.rejected.length ? 1 : 0;
  } catch (e) {
    err(`import stopped after ${summary.done} of ${pending.length} items: ${(e as Error).message}`);
    err('import: nothing past the last committed batch was written; the counts below are what was committed.');
    process.stdout.write(summaryText(files, summary));
    code = 1;
  } finally {
    await db.close().catch((e) => err(`import: stopping the embedded Postgres failed: ${(e as Error).message}`));
  }
  return code;
}

if (runsAsTool(import.meta.url)) {
  process.exit(await main(process.argv.slice(2)));
}
