/**
 * `npm run export -- --market MID | --event EID | --day YYYY-MM-DD [--from T] [--to T] [--out PATH]`:
 * writes the record of a market (or of every market of an event, or every market recorded on a
 * day) as Betfair historic stream files, one `mcm` a line, one file a market, which `npm run
 * replay` (and any reader of Betfair's historic data) reads back. Exit 0 when every market was
 * written whole, 1 when one could not be (no reference data, no record) or lacks images the record
 * holds but cannot rebuild (each counted on stderr), 2 for bad usage. An event's player race that
 * only its nested markets priced is no market to write: they are, each in its own file.
 */
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type pg from 'pg';
import { loadConfig } from '../config.js';
import { createLogger } from '../log.js';
import { createPool } from '../db/pool.js';
import { isMarketId } from '../refdata/ids.js';
import type { MarketType } from '../refdata/types.js';
import type { WireTerms } from '../refdata/wire.js';
import { RecordReader } from '../record/query.js';
import { RecordSnapshots } from '../record/snapshot.js';
import { BetfairExport, type MarketReference } from '../record/export.js';
import { DAY_MS } from '../record/partitions.js';
import { UsageError, parseCommandLine, refuseStart, wholeNumber } from './args.js';
import { openDatabase } from './database.js';
import { runsAsTool } from './fresh.js';

const USAGE = `usage: npm run export -- (--market MID | --event EID | --day YYYY-MM-DD) [--from TIME] [--to TIME] [--out PATH]
  --market  one market's record: to PATH (a file), or to stdout
  --event   every market of an event, one file each (<mid>.json) in the folder PATH; a player race's are its nested markets'
  --day     every market recorded that day (UTC), one file each in the folder PATH
  --from    from this time (ISO 8601, or ms since 1970); default: the record's start
  --to      up to this time; default: now. Never past what the record holds complete (its live end, a second or so behind now)
The service's database is DATABASE_URL (or the running service's embedded one); the record's is
RECORD_DATABASE_URL when set, else the same.`;

const PAGE = 1000;

interface ExportArgs {
  what: { market: string } | { event: number } | { day: number };
  from: number;
  to: number;
  out?: string;
}

function time(value: string | undefined, option: string, fallback: number): number {
  if (value === undefined) return fallback;
  const ms = /^\d{1,16}$/.test(value) ? Number(value) : /^\d{4}-\d\d-\d\d/.test(value) ? Date.parse(value) : NaN;
  if (!Number.isFinite(ms)) throw new UsageError(`${option} must be an ISO 8601 time (2026-05-01T14:00:00Z) or ms since 1970, got ${value}`);
  return ms;
}

export function parseArgs(argv: string[], now = Date.now()): ExportArgs | 'help' {
  const line = parseCommandLine(argv, ['market', 'event', 'day', 'from', 'to', 'out']);
  if (line.help) return 'help';
  const { market, event, day, out } = line.options;
  if ([market, event, day].filter((v) => v !== undefined).length !== 1) throw new UsageError('give one of --market, --event or --day');
  if (line.positionals.length) throw new UsageError(`unexpected argument ${line.positionals[0]}`);
  let what: ExportArgs['what'];
  if (market !== undefined) {
    if (!isMarketId(market)) throw new UsageError(`--market must be a market ID ([A-Za-z0-9._:-]{1,64}), got ${market}`);
    what = { market };
  } else if (event !== undefined) what = { event: wholeNumber(event, '--event', 1, Number.MAX_SAFE_INTEGER)! };
  else {
    const ms = /^\d{4}-\d\d-\d\d$/.test(day!) ? Date.parse(`${day}T00:00:00Z`) : NaN;
    if (!Number.isFinite(ms)) throw new UsageError(`--day must be a date such as 2026-11-25, got ${day}`);
    what = { day: ms };
  }
  if (!('market' in what) && out === undefined) throw new UsageError('--event and --day write one file a market: give the folder with --out');
  const dayRange = 'day' in what ? { from: what.day, to: what.day + DAY_MS - 1 } : { from: 0, to: now };
  const from = time(line.options.from, '--from', dayRange.from);
  const to = time(line.options.to, '--to', dayRange.to);
  if (to < from) throw new UsageError('--to must not be before --from');
  return { what, from, to, out };
}

async function reference(db: pg.Pool, mid: string): Promise<MarketReference | undefined> {
  const m = await db.query<{ na: string | null; ty: MarketType | null; eid: number; si: number; ena: string; st: Date }>(
    'SELECT m.na, m.ty, e.eid, e.si, e.na AS ena, e.st FROM markets m JOIN events e ON e.eid = m.eid WHERE m.mid = $1', [mid]);
  const row = m.rows[0];
  if (!row) return undefined;
  const runners = await db.query<{ rid: number; na: string }>('SELECT rid, na FROM runners WHERE mid = $1', [mid]);
  return {
    mid, si: row.si, eid: row.eid, name: row.na ?? mid, type: row.ty, eventName: row.ena, openDate: row.st.toISOString(),
    runners: new Map(runners.rows.map((r) => [r.rid, r.na])),
  };
}

async function markets(db: pg.Pool, record: pg.Pool, args: ExportArgs): Promise<string[]> {
  const { what } = args;
  if ('market' in what) return [what.market];
  if ('event' in what) return (await db.query<{ mid: string }>('SELECT mid FROM markets WHERE eid = $1 ORDER BY pos, mid', [what.event])).rows.map((r) => r.mid);
  return (await record.query<{ mid: string }>('SELECT DISTINCT mid FROM record_odds WHERE pt >= $1 AND pt <= $2 ORDER BY mid', [args.from, args.to])).rows.map((r) => r.mid);
}

/** Whether the record holds an image of the market in the range. */
async function recorded(record: pg.Pool, mid: string, args: Pick<ExportArgs, 'from' | 'to'>): Promise<boolean> {
  return (await record.query('SELECT 1 FROM record_odds WHERE mid = $1 AND pt >= $2 AND pt <= $3 LIMIT 1', [mid, args.from, args.to])).rowCount !== 0;
}

/** What one market's export wrote, and the images the record holds of it but could not rebuild (left out). */
export interface Exported {
  images: number;
  unreadable: number;
}

const termsOf = (frame: Record<string, unknown> | undefined): WireTerms | undefined => frame?.terms as WireTerms | undefined;

/** Writes one market's images as lines, each definition with the terms the record held then. */
export async function exportMarket(record: RecordSnapshots, ref: MarketReference, args: Pick<ExportArgs, 'from' | 'to'>, out: Writable): Promise<Exported> {
  const bf = new BetfairExport(ref);
  // The terms in force as the range starts, then each `market` frame's as it comes: a definition says the terms of its time.
  if (args.from > 0) bf.setTerms(termsOf((await record.read((db) => new RecordReader(db).priceAt(ref.mid, args.from - 1))).market?.frame));
  let after: string | undefined;
  let n = 0;
  let unreadable = 0;
  // What the record holds complete when the export starts, however far `to` reaches: the pages
  // past the complete mark are the live end's, to be asked again later, not waited for here.
  const to = await record.read((db) => new RecordReader(db).completeBy(args.to));
  if (to < args.from) return { images: 0, unreadable: 0 };
  do {
    const page = await record.read((db) => new RecordReader(db).changes(ref.mid, args.from, to, PAGE, after));
    for (const c of page.changes) {
      if (c.kind === 'unreadable') unreadable++;
      if (c.kind === 'market') bf.setTerms(termsOf(c.frame));
      if (c.kind !== 'odds') continue;
      const { kind: _kind, ...image } = c;
      if (!out.write(bf.line(image) + '\n')) await once(out, 'drain');
      n++;
    }
    after = page.next ?? undefined;
  } while (after);
  return { images: n, unreadable };
}

async function run(args: ExportArgs, service: pg.Pool, record: pg.Pool): Promise<number> {
  const snapshots = new RecordSnapshots(record);
  const mids = await markets(service, record, args);
  if (!mids.length) process.stderr.write('export: no market to export\n');
  let failed = 0;
  if (!('market' in args.what)) await mkdir(args.out!, { recursive: true });
  for (const mid of mids) {
    const ref = await reference(service, mid);
    if (!ref) {
      process.stderr.write(`export: ${mid}: no reference data (market or event) in the service's database; skipped\n`);
      failed++;
      continue;
    }
    // An event's player race is priced through its nested markets, each written on its own: the
    // race gets a file only when a publisher priced it too, rather than an empty one and exit 1.
    if ('event' in args.what && ref.type === 'player-race' && !(await recorded(record, mid, args))) {
      process.stderr.write(`export: ${mid}: a player race, priced through its nested markets; no file of its own\n`);
      continue;
    }
    const path = 'market' in args.what ? args.out : join(args.out!, `${mid}.json`);
    const out = path ? createWriteStream(path) : process.stdout;
    const { images, unreadable } = await exportMarket(snapshots, ref, args, out);
    if (path) {
      out.end();
      await once(out, 'finish');
    }
    process.stderr.write(`export: ${mid}: ${images} images${path ? ` to ${path}` : ''}\n`);
    if (!images && !unreadable) process.stderr.write(`export: ${mid}: no image recorded in the range\n`);
    if (unreadable) process.stderr.write(`export: ${mid}: ${unreadable} images the record holds but cannot rebuild (a full image Postgres refused); left out\n`);
    if (!images || unreadable) failed++;
  }
  return failed ? 1 : 0;
}

async function main(argv: string[]): Promise<number> {
  let args: ExportArgs | 'help';
  let config;
  try {
    args = parseArgs(argv);
    if (args === 'help') {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    config = loadConfig();
  } catch (err) {
    return refuseStart('export', USAGE, err);
  }
  const log = createLogger('warn', config.logPretty, (l) => process.stderr.write(l));
  let db;
  try {
    db = await openDatabase(config, log, 'export');
  } catch (e) {
    process.stderr.write(`export: ${(e as Error).message}\n`);
    return 1;
  }
  process.stderr.write(`export: database: ${db.where}${config.recordDatabaseUrl ? '; the record: RECORD_DATABASE_URL' : ''}\n`);
  const record = config.recordDatabaseUrl ? createPool(config.recordDatabaseUrl, config, log) : db.pool;
  try {
    return await run(args, db.pool, record);
  } catch (e) {
    process.stderr.write(`export: ${(e as Error).message}\n`);
    return 1;
  } finally {
    if (record !== db.pool) await record.end().catch(() => undefined);
    await db.close();
  }
}

if (runsAsTool(import.meta.url)) {
  main(process.argv.slice(2)).then((code) => (process.exitCode = code), (err: unknown) => {
    process.stderr.write(`export: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  });
}
