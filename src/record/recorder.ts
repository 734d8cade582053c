import type { Logger } from '../log.js';
import type { Component } from '../lib/component.js';
import { Backoff, wait } from '../lib/retry.js';
import { isRefusedData } from '../db/pool.js';
import type { RecordMetrics } from '../metrics/record.js';
import type { RecordBatch, RecordEntry, RecordLog } from '../bus/types.js';
import { RowEncoder, Rows } from './rows.js';
import { RecordWriter, type RecordStore } from './writer.js';
import { Lease, type RecordLease } from './lease.js';
/** How often a pod without the lease tries to take it; and how often the recorder drops old partitions. */
const LEASE_RETRY_MS = 2000;
const RETENTION_MS = 3_600_000;
/**
 * How long a stop writes what the log still holds. With NATS what is left stays in the stream for
 * the next recorder; with BUS=memory it is lost with the process, and counted by nothing: a
 * drained pod publishes nothing more, so the log is all but empty by then.
 */
const FLUSH_MS = 5000;
/** How long a stop waits for a write under way once it gives up (a frozen Postgres answers nothing). */
const GIVE_UP_MS = 1000;
/** How often an idle recorder moves the record's complete mark on, so a reader at the live end waits no longer than this for it. */
const IDLE_MARK_MS = 1000;

export interface RecorderOptions {
  /** The record's Postgres (RECORD_DATABASE_URL, else the service's). */
  url: string;
  /** Days kept besides today (RECORD_DAYS). */
  days: number;
  /** Entries written per batch at most. */
  batch: number;
  /** How long a batch gathers after its first entry before it is written, unless full sooner (RECORD_FLUSH_MS); 0 writes whatever waits at once. */
  flushMs: number;
  connectTimeoutMs: number;
  writeTimeoutMs: number;
  /**
   * How far behind the recorder's clock an entry may reach the log (RECORD_SETTLE_MS, 1000 by
   * default): a pod's clock behind the recorder's, and the time from an entry's stamp until the
   * bus holds it. The complete mark stays this far behind what the log has handed out.
   */
  settleMs?: number;
}

/** Told when this pod becomes the recorder: what it publishes from now on is recorded, starting with where every market stands. */
export interface Takeover {
  tookOver(): void;
}

export interface RecorderDeps {
  log: RecordLog;
  metrics: RecordMetrics;
  logger: Logger;
  now?: () => number;
  /** Where rows go; by default the record's Postgres at `url` (writer.ts). */
  store?: RecordStore;
  /** Who records; by default the advisory lock on the record's Postgres at `url` (lease.ts). */
  lease?: RecordLease;
}

const DEFAULT_SETTLE_MS = 1000;
const entryTime = (e: RecordEntry): number => (e.kind === 'odds' ? e.o.publishTime : e.note.at);

/**
 * The one recorder of the cluster, on the pod that holds its lease (lease.ts): it reads the
 * record's log (the bus's: a bounded queue with BUS=memory, a JetStream consumer with BUS=nats)
 * in batches, writes each batch with COPY (writer.ts), and only then acknowledges it, so a
 * recorder that stops, however it stops, loses nothing and the next one writes nothing twice. A
 * write that fails is tried again with backoff, for as long as it takes: meanwhile the log holds
 * what is not written (bounded), and publishing never waits. Once an hour, and when it takes the
 * lease, it drops the partitions past the retention.
 */
export class Recorder implements Component {
  readonly name = 'recorder';
  private readonly stopping = new AbortController();
  /** Aborted first at stop: waiting for entries ends, and what the log still holds is written (for FLUSH_MS) before the recorder stops. */
  private readonly idle = new AbortController();
  private readonly lease: RecordLease;
  private readonly store: RecordStore;
  private readonly encoder = new RowEncoder();
  private readonly takeovers: Takeover[] = [];
  private loop: Promise<void> | undefined;
  /** Time of the oldest entry taken and not yet written: the lag. */
  private pendingSince: number | undefined;
  private lastRetention = Number.NEGATIVE_INFINITY;
  private readonly now: () => number;
  /** The record's complete mark as this recorder last wrote it: an entry at or before it is late. */
  private complete = Number.NEGATIVE_INFINITY;
  /** Until then a batch moves no mark: entries a recorder before this one took and never wrote may still be handed out again (RecordLog.redeliverMs). */
  private holdUntil = Number.POSITIVE_INFINITY;

  constructor(private readonly opts: RecorderOptions, private readonly deps: RecorderDeps) {
    this.now = deps.now ?? Date.now;
    this.lease = deps.lease ?? new Lease(opts.url, opts.connectTimeoutMs);
    this.store = deps.store ?? new RecordWriter({ url: opts.url, connectTimeoutMs: opts.connectTimeoutMs, writeTimeoutMs: opts.writeTimeoutMs });
  }

  /** Whether this pod records: it holds the lease. */
  get leading(): boolean {
    return this.lease.held;
  }

  /** Told each time this pod takes the lease. */
  watch(t: Takeover): void {
    this.takeovers.push(t);
  }

  /** Seconds the oldest unwritten entry has waited; 0 when none waits. */
  lag(): number {
    return this.pendingSince === undefined ? 0 : Math.max(0, this.now() - this.pendingSince) / 1000;
  }

  /** The first try at the lease is awaited, so a lone pod records from its first published frame. */
  async start(): Promise<void> {
    const first = this.tryLease().catch((err: Error) => {
      this.deps.logger.warn('recorder: record database not reachable yet', { err: err.message });
      return false;
    });
    this.loop = first.then((held) => this.run(held));
    await first;
  }

  async stop(): Promise<void> {
    this.idle.abort();
    await this.stopped(FLUSH_MS);
    this.stopping.abort();
    await this.stopped(GIVE_UP_MS);
    this.lease.release();
    this.store.close();
    this.deps.metrics.leader.set(0);
  }

  /** Until the loop ends or `ms` pass; the timer goes with it, so a stopped recorder holds the process no longer. */
  private async stopped(ms: number): Promise<void> {
    const done = new AbortController();
    await Promise.race([this.loop, wait(ms, done.signal)]);
    done.abort();
  }

  /** Drops the partitions past the retention now (the hourly pass does the same). */
  async retain(): Promise<string[]> {
    const dropped = await this.store.retain(this.opts.days, this.now());
    this.lastRetention = this.now();
    if (dropped.length) this.deps.logger.info('record retention: partitions dropped', { dropped: dropped.length, first: dropped[0] });
    return dropped;
  }

  private async tryLease(): Promise<boolean> {
    if (!(await this.lease.acquire(() => this.deps.metrics.leader.set(0)))) return false;
    try {
      await this.store.migrate(this.deps.logger);
    } catch (err) {
      this.lease.release();
      throw err;
    }
    this.deps.metrics.leader.set(1);
    this.holdUntil = this.now() + this.deps.log.redeliverMs;
    this.deps.logger.info('recorder: this pod records', { days: this.opts.days });
    for (const t of this.takeovers) t.tookOver();
    return true;
  }

  private async run(held: boolean): Promise<void> {
    const { signal } = this.stopping;
    const backoff = new Backoff(LEASE_RETRY_MS / 4, LEASE_RETRY_MS * 4);
    while (!signal.aborted && !this.idle.signal.aborted) {
      try {
        if (held || (await this.tryLease())) {
          backoff.reset();
          await this.drain(signal);
        }
      } catch (err) {
        this.deps.logger.warn('recorder: lease or record database failed; trying again', { err: (err as Error).message });
      }
      held = false;
      await wait(this.lease.held ? 0 : backoff.next(), signal);
    }
  }

  /** While this pod holds the lease: batch after batch, each written before it is acknowledged. */
  private async drain(signal: AbortSignal): Promise<void> {
    while (!signal.aborted && this.lease.held) {
      if (this.now() - this.lastRetention >= RETENTION_MS) await this.retain();
      // Woken once a minute even when idle, for the retention and the lease; at stop, only what is held is read.
      const flushing = this.idle.signal.aborted;
      // A steady feed gathered for flushMs costs a write per interval, not one per publish: a write is
      // several round trips and wake-ups, which at hundreds of small batches a second cost the pod
      // more than its fan-out.
      const batch = await this.deps.log.next(this.opts.batch, flushing ? this.idle.signal : AbortSignal.any([this.idle.signal, AbortSignal.timeout(60_000)]), flushing ? 0 : this.opts.flushMs, flushing ? undefined : IDLE_MARK_MS);
      if (!batch) {
        if (flushing) return;
        await this.markIdle();
        continue;
      }
      if (batch.entries.length) this.pendingSince = entryTime(batch.entries[0]);
      await this.write(batch, signal);
      if (signal.aborted) return;
      await batch.ack();
      this.pendingSince = undefined;
    }
  }

  private async write(batch: RecordBatch, signal: AbortSignal): Promise<void> {
    const rows: Rows = this.encoder.encode(batch.entries);
    if (rows.invalid) this.deps.metrics.lost.inc({ where: 'invalid' }, rows.invalid);
    // Of what `changes` pages (images and state frames): a socket's ledger is read whole, not from a cursor.
    const late = batch.entries.reduce((n, e) => ((e.kind === 'odds' || e.note.topic === 'state') && entryTime(e) <= this.complete ? n + 1 : n), 0);
    if (late) this.deps.metrics.late.inc(late);
    await this.writeRows(rows, signal, this.markOf(batch));
  }

  /**
   * The complete mark a batch's commit moves the record to: everything that reached the log
   * before the batch drained it is in the batch or written before, and whatever comes later is
   * stamped no earlier than `settleMs` before that (docs/record.md). Why a mark rather than a
   * cursor in commit order: pages stay in time order with their cursors as they were, a range in
   * the past reads as before, and the mark is one row written in the batch's own transaction.
   * None while the log cannot say it drained, or a recorder before this one may have entries
   * handed out and unwritten.
   */
  private markOf(batch: RecordBatch): number | undefined {
    if (batch.drainedAt === undefined || this.now() < this.holdUntil) return undefined;
    return batch.drainedAt - (this.opts.settleMs ?? DEFAULT_SETTLE_MS);
  }

  /**
   * Nothing came for a while: if the log holds nothing unwritten (with NATS, nothing unread nor
   * handed out unacknowledged, a recorder's before this one included), the record is complete up
   * to now, less the settling time. A failure here waits for the next try: the mark only lags.
   */
  private async markIdle(): Promise<void> {
    const at = this.now();
    try {
      if ((await this.deps.log.backlog()).entries) return;
      this.complete = Math.max(this.complete, await this.store.mark(at - (this.opts.settleMs ?? DEFAULT_SETTLE_MS)));
    } catch (err) {
      this.deps.logger.debug('recorder: the complete mark was not moved; tried again when idle', { err: (err as Error).message });
    }
  }

  /**
   * Writes rows, trying again for as long as Postgres cannot take them (down, frozen, full). Rows
   * it refuses (a value a column cannot hold) would fail as they are for ever, holding back
   * everything after them: they are halved until the refused one is found and set aside.
   */
  private async writeRows(rows: Rows, signal: AbortSignal, mark?: number): Promise<void> {
    const { metrics, logger } = this.deps;
    const backoff = new Backoff(100, 5000);
    for (;;) {
      const t0 = performance.now();
      try {
        const complete = await this.store.write(rows, mark);
        if (complete !== undefined) this.complete = Math.max(this.complete, complete);
        metrics.writeSeconds.observe((performance.now() - t0) / 1000);
        for (const [table, lines] of Object.entries(rows.lines)) if (lines.length) metrics.written.inc({ table: table.slice(7) }, lines.length);
        return;
      } catch (err) {
        metrics.failures.inc();
        if (isRefusedData(err)) return this.setAside(rows, err as Error, signal, mark);
        if (backoff.attempts % 10 === 0) logger.warn('recorder: write failed; trying again', { err: (err as Error).message, attempts: backoff.attempts + 1 });
        await wait(backoff.next(), signal);
        if (signal.aborted) return;
      }
    }
  }

  /** Rows Postgres refused: each half written on its own, down to the one refused, which is logged and counted lost. */
  private async setAside(rows: Rows, err: Error, signal: AbortSignal, mark: number | undefined): Promise<void> {
    if (rows.size > 1) {
      for (const half of rows.halves()) if (!signal.aborted) await this.writeRows(half, signal);
    } else {
      const [table, line] = rows.first ?? ['', ''];
      this.deps.metrics.lost.inc({ where: 'refused' });
      this.deps.logger.warn('recorder: Postgres refused a row; it is set aside and the rest written', { table, row: line.slice(0, 200), err: err.message, code: (err as { code?: string }).code });
    }
    // The batch's mark only once each of its rows is written or set aside.
    if (mark !== undefined && !signal.aborted) await this.writeRows(new Rows(), signal, mark);
  }
}
