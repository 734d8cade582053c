import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Logger } from '../log.js';
import { migrate } from '../db/migrate.js';
import { Partitions, RECORD_TABLES } from './partitions.js';
import type { Rows } from './rows.js';

/** The record's migrations, apart from the service's: the record may live in a database of its own. */
const RECORD_SQL = new URL('../../../sql/record/', import.meta.url).pathname;

/** Where the recorder writes (recorder.ts): the record's Postgres, or a unit test's fake. */
export interface RecordStore {
  /** Applies the record's migrations; run by the pod that takes the lease, before its first write. */
  migrate(logger: Logger): Promise<void>;
  /**
   * Writes `rows` and, when given, moves the record's complete mark to `mark` in the same
   * transaction (a reader that sees the mark sees the rows). Answers the mark in force then.
   */
  write(rows: Rows, mark?: number): Promise<number | undefined>;
  /** Moves the record's complete mark to `at` (never back); answers the mark in force. */
  mark(at: number): Promise<number>;
  /** Drops the partitions past the retention (partitions.ts); answers their names. */
  retain(keepDays: number, now: number): Promise<string[]>;
  close(): void;
}

export interface WriterOptions {
  url: string;
  connectTimeoutMs: number;
  /** A write unanswered for this long is given up and tried again on a new connection (a frozen Postgres). */
  writeTimeoutMs: number;
}

/** The one row of `record_complete`, moved forward only: two recorders' clocks never take it back. */
async function moveMark(c: pg.ClientBase, at: number): Promise<number> {
  const { rows: [row] } = await c.query<{ at: string }>(
    `INSERT INTO record_complete (one, at) VALUES (true, $1) ON CONFLICT (one) DO UPDATE SET at = GREATEST(record_complete.at, EXCLUDED.at) RETURNING at`, [Math.floor(at)]);
  return Number(row.at);
}

/** Lines per chunk handed to COPY: large enough to cost few writes, small enough to stream. */
const CHUNK = 1000;

function* chunks(lines: readonly string[]): Generator<string> {
  for (let i = 0; i < lines.length; i += CHUNK) yield lines.slice(i, i + CHUNK).join('\n') + '\n';
}

/**
 * Writes batches of rows to the record's Postgres on one connection of its own: per table, COPY
 * into a temporary table, then one INSERT that skips rows already there, all in one transaction.
 * A batch delivered twice (the recorder stopped after writing it, before its acknowledgement)
 * therefore leaves each row once. A failed or unanswered write drops the connection; the caller
 * tries the same rows again.
 */
export class RecordWriter implements RecordStore {
  private client: pg.Client | undefined;
  private readonly partitions = new Partitions();

  constructor(private readonly opts: WriterOptions) {}

  async migrate(logger: Logger): Promise<void> {
    const pool = new pg.Pool({ connectionString: this.opts.url, max: 1, connectionTimeoutMillis: this.opts.connectTimeoutMs });
    pool.on('error', () => undefined);
    try {
      await migrate(pool, logger, RECORD_SQL);
    } finally {
      await pool.end();
    }
  }

  async write(rows: Rows, mark?: number): Promise<number | undefined> {
    const c = await this.connection();
    let complete: number | undefined;
    try {
      await c.query('BEGIN');
      for (const table of RECORD_TABLES) {
        const lines = rows.lines[table];
        if (!lines.length) continue;
        await this.partitions.ensure(c, table, rows.days[table]);
        await pipeline(Readable.from(chunks(lines)), c.query(copyFrom(`COPY stage_${table} FROM STDIN`)));
        await c.query(`INSERT INTO ${table} SELECT * FROM stage_${table} ON CONFLICT DO NOTHING`);
      }
      if (mark !== undefined) complete = await moveMark(c, mark);
      await c.query('COMMIT');
    } catch (err) {
      this.partitions.forget();
      this.drop();
      throw err;
    }
    return complete;
  }

  async mark(at: number): Promise<number> {
    return this.run((c) => moveMark(c, at));
  }

  async retain(keepDays: number, now: number): Promise<string[]> {
    return this.run((c) => this.partitions.retain(c, keepDays, now));
  }

  /** Runs `fn` on the writer's connection between writes. */
  private async run<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
    const c = await this.connection();
    try {
      return await fn(c);
    } catch (err) {
      this.drop();
      throw err;
    }
  }

  close(): void {
    this.drop();
  }

  private async connection(): Promise<pg.Client> {
    if (this.client) return this.client;
    const c = new pg.Client({
      connectionString: this.opts.url, connectionTimeoutMillis: this.opts.connectTimeoutMs, query_timeout: this.opts.writeTimeoutMs,
      application_name: 'odds-recorder', keepAlive: true,
    });
    // A connection lost between writes must not be an uncaught error; the next write finds it gone.
    c.on('error', () => this.drop(c));
    try {
      await c.connect();
      for (const table of RECORD_TABLES) await c.query(`CREATE TEMP TABLE IF NOT EXISTS stage_${table} (LIKE ${table}) ON COMMIT DELETE ROWS`);
    } catch (err) {
      void c.end().catch(() => undefined);
      throw err;
    }
    this.client = c;
    return c;
  }

  private drop(c = this.client): void {
    if (!c) return;
    if (c === this.client) this.client = undefined;
    // Not awaited: a frozen server never answers the goodbye.
    void c.end().catch(() => undefined);
  }
}
