import type pg from 'pg';
import { errors } from '../errors.js';
import type { Logger } from '../log.js';
import type { Component } from '../lib/component.js';
import type { ModelChange, ReadModel } from './model.js';

const RETRY_MS = 1000;

/** Told what each reload did: what changed, how late, or that it failed. */
export interface SyncObserver {
  /** What a reload changed, targeted or full. */
  changes?(changes: ModelChange[]): void;
  /** Seconds from the first NOTIFY of a batch to the model reflecting it. */
  lag?(seconds: number): void;
  failed?(): void;
}

/** A caller of show(), told when the pass that covers its keys has ended. */
interface Waiter {
  ok(): void;
  fail(err: Error): void;
  /** A pass covering it failed already: the next failure refuses it. */
  again?: boolean;
}

/**
 * Keeps the read model equal to Postgres. NOTIFY payloads gather while a
 * reload runs and are applied together after it; a (re)connected listener
 * asks for a full reload, since notifications sent while it was away are lost.
 * Reloads run one at a time, each reading only after the previous one ended, so
 * an older answer never overwrites a newer one: a NOTIFY arriving late, a full
 * reload, and this pod's own writes (show) all go through the one queue.
 */
export class ModelSync implements Component {
  readonly name = 'read model';
  private pending = new Set<string>();
  private full = false;
  private running = false;
  private retry: NodeJS.Timeout | undefined;
  private loadedOnce = false;
  private waiters: (() => void)[] = [];
  private batchStart = 0;
  private stopped = false;
  /** Callers of show() whose keys the next pass to start covers. */
  private waiting: Waiter[] = [];

  constructor(
    private readonly db: Pick<pg.Pool, 'query'>,
    private readonly model: ReadModel,
    private readonly log: Logger,
    private readonly observer: SyncObserver = {},
  ) {}

  /** Started after the listener, whose connect asks for the first full load: resolves once the model has been fully loaded. */
  start(): Promise<void> {
    return this.loadedOnce ? Promise.resolve() : new Promise((ok) => this.waiters.push(ok));
  }

  reloadAll(): void {
    this.full = true;
    this.kick();
  }

  notify(key: string): void {
    this.gather(key);
    this.kick();
  }

  /**
   * Read your writes: refreshes the keys a transaction of this pod wrote (as
   * NOTIFY names them) and resolves once the model holds them and their frames
   * went to subscribers, so the writer acks only what this pod shows. A pass
   * already running may have read before the commit: only the next one to
   * start counts. When that pass fails, the full reload after it counts;
   * rejects when that fails too, or the sync stops (the write stays
   * committed, and the model catches up once Postgres answers).
   */
  show(keys: Iterable<string>): Promise<void> {
    const wrote = [...keys];
    if (!wrote.length) return Promise.resolve();
    if (this.stopped) return Promise.reject(errors.writtenNotShown());
    // The waiter and every key are in before the one kick: a pass takes both as it starts, and one
    // started by the first key would read that row alone and answer for the whole write.
    const shown = new Promise<void>((ok, fail) => this.waiting.push({ ok, fail }));
    for (const key of wrote) this.gather(key);
    this.kick();
    return shown;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
    for (const w of this.waiting.splice(0)) w.fail(errors.writtenNotShown());
  }

  private gather(key: string): void {
    if (!this.pending.size) this.batchStart = performance.now();
    this.pending.add(key);
  }

  private kick(): void {
    if (!this.running && !this.stopped) void this.run();
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.full || this.pending.size) {
        const covered = this.waiting.splice(0);
        try {
          await this.pass();
        } catch (err) {
          // One failure is often a pooled connection Postgres dropped: the full reload after it gets one more chance.
          for (const w of covered) {
            if (w.again) w.fail(errors.writtenNotShown());
            else this.waiting.push(Object.assign(w, { again: true }));
          }
          throw err;
        }
        for (const w of covered) w.ok();
      }
    } catch (err) {
      // A reload still in flight when the service stopped fails on the ended pool: no retry then,
      // or its timer would keep the process alive for ever.
      if (this.stopped) return;
      // Whatever was missed is covered by a full reload once Postgres answers again.
      this.log.warn('read model refresh failed; retrying', { err: (err as Error).message });
      this.observer.failed?.();
      this.full = true;
      clearTimeout(this.retry);
      this.retry = setTimeout(() => this.kick(), RETRY_MS);
    } finally {
      this.running = false;
    }
  }

  /** One reload, full or of the keys gathered, reading only now; its changes told before it ends. */
  private async pass(): Promise<void> {
    if (this.full) {
      this.full = false;
      this.pending.clear();
      const changes = await this.model.loadAll(this.db);
      this.markLoaded();
      if (changes.length) this.observer.changes?.(changes);
    } else {
      const keys = this.pending;
      const start = this.batchStart;
      this.pending = new Set();
      const changes = await this.model.refresh(this.db, keys);
      this.observer.lag?.((performance.now() - start) / 1000);
      if (changes.length) this.observer.changes?.(changes);
    }
  }

  private markLoaded(): void {
    if (this.loadedOnce) return;
    this.loadedOnce = true;
    for (const w of this.waiters.splice(0)) w();
  }
}
