/**
 * `npm run bench:record`: the record (src/record) on its own, against the Postgres of
 * DATABASE_URL (a database of its own, made and dropped here):
 *
 * - rate: the real recorder drains an in-process log (BUS=memory's) fed BENCH_RATE (50,000)
 *   changes a second for BENCH_SECONDS (20) over BENCH_MARKETS (1,000) markets of 3 runners and
 *   10 levels a side, each change one level's size or price. Reported: the recorder's CPU per
 *   change (this process, less the feeder's own, measured alone first) and Postgres's (the
 *   recorder's connection), bytes stored per change (the partitions with their index), and the
 *   recorder's lag: sampled every 100 ms, and the time to write what was left once the feed stops.
 * - month: BENCH_MONTH_DAYS (30) days of BENCH_MONTH_MARKETS (1,000) markets changing
 *   BENCH_MONTH_PER_DAY (1,000) times a day each, stored as the recorder stores them (its row
 *   encoder, COPY into the partitions), then BENCH_QUERIES (2,000) price-at-time lookups (the
 *   route's work, RecordReader.priceAt) at random markets and instants: p50, p99, and the tables'
 *   sizes. BENCH_KEEP=on leaves the database.
 *
 * Results go to bench/results/record.{json,md}; bench/README.md quotes them with the command.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { Registry } from 'prom-client';
import { createLogger } from '../src/log.js';
import '../src/db/pool.js';
import { RecordMetrics } from '../src/metrics/record.js';
import { MemoryRecordLog } from '../src/bus/record-log.js';
import { Recorder } from '../src/record/recorder.js';
import { RowEncoder } from '../src/record/rows.js';
import { RecordReader } from '../src/record/query.js';
import { DAY_MS, Partitions, dayOf } from '../src/record/partitions.js';
import { migrate } from '../src/db/migrate.js';
import type { Ordered } from '../src/odds/book.js';
import type { OddsImage, RunnerPrices } from '../src/odds/image.js';
import type { PriceSize } from '../src/odds/messages.js';
import { envFlag, envNumber } from './lib/env.js';
import { cpuMicros, machine } from './lib/proc.js';
import { fmt, mdTable, writeResults } from './lib/report.js';
import { log, runMain, sleep } from './lib/run.js';
import { Histogram } from './lib/statistics.js';

const SETTINGS = Object.freeze({
  rate: envNumber('BENCH_RATE', 50_000),
  seconds: envNumber('BENCH_SECONDS', 20),
  markets: envNumber('BENCH_MARKETS', 1000),
  monthDays: envNumber('BENCH_MONTH_DAYS', 30),
  monthMarkets: envNumber('BENCH_MONTH_MARKETS', 1000),
  monthPerDay: envNumber('BENCH_MONTH_PER_DAY', 1000),
  queries: envNumber('BENCH_QUERIES', 2000),
  keep: envFlag('BENCH_KEEP', false),
});
const ADMIN = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const RECORD_SQL = new URL('../../sql/record/', import.meta.url).pathname;

/** A seeded generator, so every run records the same changes. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

/** Markets of 3 runners and 10 levels a side; each `next` moves one level of one market, as an exchange's change does. */
class Exchange {
  private readonly images: OddsImage[];
  private readonly seqs: number[];
  private readonly rand = random(7);

  constructor(markets: number) {
    this.images = Array.from({ length: markets }, (_, m) => ({
      marketId: `1.${300000000 + m}`, sourceTime: 0, status: 'OPEN', inPlay: true,
      runners: [0, 1, 2].map((i): RunnerPrices => {
        const best = 2 + i + (m % 7) / 10;
        return { runnerId: 1000 + i, status: 'ACTIVE', back: this.ladder(best, -0.02), lay: this.ladder(best + 0.02, 0.02), lastTraded: best, tradedVolume: 1000 };
      }),
    }));
    this.seqs = new Array<number>(markets).fill(0);
  }

  private ladder(best: number, step: number): PriceSize[] {
    return Array.from({ length: 10 }, (_, i) => [Math.round((best + i * step) * 100) / 100, Math.round(this.rand() * 50000) / 100]);
  }

  /** The next image of market `m` at `pt`: one level's size changed, now and then a trade. */
  next(m: number, pt: number): Ordered {
    const was = this.images[m];
    const ri = Math.floor(this.rand() * 3);
    const side = this.rand() < 0.5 ? 'back' : 'lay';
    const level = Math.min(9, Math.floor(this.rand() ** 2 * 10));
    const runners = was.runners.map((x, i) => {
      if (i !== ri) return x;
      const ladder = x[side].slice();
      ladder[level] = [ladder[level][0], Math.round(this.rand() * 50000) / 100];
      const traded = this.rand() < 0.1;
      return { ...x, [side]: ladder, ...(traded ? { tradedVolume: (x.tradedVolume ?? 0) + 2 } : {}) };
    });
    const image: OddsImage = { ...was, sourceTime: pt - 50, runners };
    this.images[m] = image;
    return { epoch: 'mbench', seq: ++this.seqs[m], publishTime: pt, image };
  }
}

async function withDb<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

const dbUrl = (name: string): string => {
  const u = new URL(ADMIN);
  u.pathname = `/${name}`;
  return u.toString();
};

/** Bytes of a table's partitions with their indexes, and its rows. */
async function size(c: pg.Client, table: string): Promise<{ bytes: number; rows: number }> {
  const b = await c.query<{ n: string }>(`SELECT coalesce(sum(pg_total_relation_size(i.inhrelid)), 0) AS n FROM pg_inherits i WHERE i.inhparent = $1::regclass`, [table]);
  const r = await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
  return { bytes: Number(b.rows[0].n), rows: Number(r.rows[0].n) };
}

async function feederCpu(ex: Exchange, markets: number, n: number): Promise<number> {
  const sink = new MemoryRecordLog(n + 1, { appended: () => undefined, dropped: () => undefined });
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) sink.append({ kind: 'odds', o: ex.next(i % markets, Date.now()) });
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / n;
}

async function rate(url: string) {
  const { rate: perSecond, seconds, markets } = SETTINGS;
  const ex = new Exchange(markets);
  const feederUs = await feederCpu(ex, markets, Math.min(perSecond * 2, 200_000));
  log(`feeder alone: ${feederUs.toFixed(2)} µs a change`);
  const queue = new MemoryRecordLog(perSecond * seconds + 1, { appended: () => undefined, dropped: () => undefined });
  const recorder = new Recorder({ url, days: 400, batch: 5000, flushMs: 250, connectTimeoutMs: 5000, writeTimeoutMs: 60_000 },
    { log: queue, metrics: new RecordMetrics(new Registry()), logger: createLogger('warn', false) });
  await recorder.start();
  const pid = await withDb(url, async (c) => Number((await c.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE application_name = 'odds-recorder'`)).rows[0]?.pid));
  const lag = new Histogram();
  const cpu0 = process.cpuUsage();
  const pg0 = pid ? cpuMicros(pid) : NaN;
  const started = performance.now();
  let sent = 0;
  let m = 0;
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * perSecond);
    const now = Date.now();
    for (; sent < due; sent++, m = (m + 1) % markets) queue.append({ kind: 'odds', o: ex.next(m, now) });
    lag.recordMs(recorder.lag() * 1000);
    await sleep(100);
  }
  const fedAt = performance.now();
  while ((await queue.backlog()).entries > 0 || recorder.lag() > 0) await sleep(20);
  const drainMs = performance.now() - fedAt;
  const cpu = process.cpuUsage(cpu0);
  const pgUs = pid ? cpuMicros(pid) - pg0 : NaN;
  await recorder.stop();
  const stored = await withDb(url, (c) => size(c, 'record_odds'));
  const nodeUs = (cpu.user + cpu.system) / sent - feederUs;
  return {
    changes: sent, seconds, achievedPerSecond: Math.round(sent / ((fedAt - started) / 1000)), recorderCpuUsPerChange: nodeUs, postgresCpuUsPerChange: pgUs / sent,
    bytesPerChange: stored.bytes / stored.rows, rows: stored.rows, lagP50Ms: lag.pMs(0.5), lagP99Ms: lag.pMs(0.99), lagMaxMs: lag.max / 1000, drainMs,
  };
}

/** A month of a busy exchange's changes, stored as the recorder stores them (its encoder, its partitions), one COPY a day. */
async function month(url: string) {
  const { monthDays: days, monthMarkets: markets, monthPerDay: perDay } = SETTINGS;
  const first = dayOf(Date.now()) - days;
  const ex = new Exchange(markets);
  const encoder = new RowEncoder();
  const partitions = new Partitions();
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const t0 = performance.now();
  for (let d = 0; d < days; d++) {
    const dayStart = (first + d) * DAY_MS;
    await partitions.ensure(c, 'record_odds', [first + d]);
    const step = DAY_MS / perDay;
    function* lines(): Generator<string> {
      for (let i = 0; i < perDay; i++) {
        const batch = [];
        for (let mk = 0; mk < markets; mk++) batch.push({ kind: 'odds' as const, o: ex.next(mk, Math.floor(dayStart + i * step + (mk * step) / markets)) });
        yield encoder.encode(batch).lines.record_odds.join('\n') + '\n';
      }
    }
    await pipeline(Readable.from(lines()), c.query(copyFrom('COPY record_odds FROM STDIN')));
    log(`month: day ${d + 1} of ${days} stored (${fmt((performance.now() - t0) / 1000)} s)`);
  }
  await c.query('ANALYZE record_odds');
  const stored = await size(c, 'record_odds');
  await c.end();

  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const reader = new RecordReader(pool);
  const rand = random(11);
  const from = first * DAY_MS;
  const span = days * DAY_MS;
  const pick = () => ({ mid: `1.${300000000 + Math.floor(rand() * markets)}`, at: Math.floor(from + rand() * span) });
  for (let i = 0; i < 200; i++) await reader.priceAt(pick().mid, pick().at);
  const h = new Histogram();
  let found = 0;
  for (let i = 0; i < SETTINGS.queries; i++) {
    const q = pick();
    const s = performance.now();
    const r = await reader.priceAt(q.mid, q.at);
    h.recordMs(performance.now() - s);
    if (r.odds) found++;
  }
  await pool.end();
  return { days, markets, perDay, rows: stored.rows, bytes: stored.bytes, bytesPerRow: stored.bytes / stored.rows, queries: SETTINGS.queries, found, p50Ms: h.pMs(0.5), p99Ms: h.pMs(0.99), maxMs: h.max / 1000 };
}

async function main(): Promise<void> {
  const name = `bench_record_${process.pid}`;
  await withDb(ADMIN, (c) => c.query(`CREATE DATABASE ${name}`));
  const url = dbUrl(name);
  try {
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    await migrate(pool, createLogger('warn', false), RECORD_SQL);
    await pool.end();
    log(`rate: ${fmt(SETTINGS.rate)} changes a second for ${SETTINGS.seconds} s over ${fmt(SETTINGS.markets)} markets`);
    const r = await rate(url);
    await withDb(url, (c) => c.query('TRUNCATE record_odds'));
    log(`month: ${SETTINGS.monthDays} days × ${fmt(SETTINGS.monthMarkets)} markets × ${fmt(SETTINGS.monthPerDay)} changes a day`);
    const mo = await month(url);
    const md = [
      mdTable(['changes/s asked', 'made/s', 'changes', 'recorder CPU µs/change', 'Postgres CPU µs/change', 'bytes stored/change', 'lag p50 ms', 'lag p99 ms', 'lag max ms', 'drained in ms'],
        [[fmt(SETTINGS.rate), fmt(r.achievedPerSecond), fmt(r.changes), fmt(r.recorderCpuUsPerChange, 2), fmt(r.postgresCpuUsPerChange, 2), fmt(r.bytesPerChange, 1), fmt(r.lagP50Ms), fmt(r.lagP99Ms), fmt(r.lagMaxMs), fmt(r.drainMs)]]),
      '',
      mdTable(['month: days', 'markets', 'changes a market a day', 'rows', 'record_odds (with index)', 'bytes/row', 'price-at-time p50 ms', 'p99 ms', 'max ms'],
        [[mo.days, fmt(mo.markets), fmt(mo.perDay), fmt(mo.rows), `${fmt(mo.bytes / 2 ** 30, 2)} GiB`, fmt(mo.bytesPerRow, 1), fmt(mo.p50Ms, 2), fmt(mo.p99Ms, 2), fmt(mo.maxMs, 2)]]),
    ].join('\n');
    const files = writeResults('record', { settings: SETTINGS, machine: machine(), rate: r, month: mo }, md);
    process.stdout.write(`${md}\n\nwritten to ${files.md}\n`);
  } finally {
    if (!SETTINGS.keep) await withDb(ADMIN, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  }
}

runMain('bench:record', main);
