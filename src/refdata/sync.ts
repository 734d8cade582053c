import type pg from 'pg';
import type { Logger } from '../log.js';
import type { ModelChange, ReadModel } from './model.js';

const RETRY_MS = 1000;

interface SyncObserver {
  /** What a reload changed, targeted or full. */
  changes?(changes: ModelChange[]): void;
  /** Seconds from the first NOTIFY of a batch to the model reflecting it. */
  lag?(seconds: number): void;
  failed?(): void;
}

/**
 * Keeps the read model equal to Postgres. NOTIFY payloads gather while a
 * reload runs and are applied together after it; a (re)connected listener
 * asks for a full reload, since notifications sent while it was away are lost.
 * Reloads run one at a time, so an older answer never overwrites a newer one.
 */
export class ModelSync {
  private pending = new Set<string>();
  private full = false;
  private running = false;
  private retry: NodeJS.Timeout | undefined;
  private loadedOnce = false;
  private waiters: (() => void)[] = [];
  private batchStart = 0;
  private stopped = false;

  constructor(
    private readonly db: Pick<pg.Pool, 'query'>,
    private readonly model: ReadModel,
    private readonly log: Logger,
    private readonly observer: SyncObserver = {},
  ) {}

  /** Resolves once the model has been fully loaded at least once. */
  whenLoaded(): Promise<void> {
    return this.loadedOnce ? Promise.resolve() : new Promise((ok) => this.waiters.push(ok));
  }

  reloadAll(): void {
    this.full = true;
    this.kick();
  }

  notify(key: string): void {
    if (!this.pending.size) this.batchStart = performance.now();
    this.pending.add(key);
    this.kick();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retry);
  }

  private kick(): void {
    if (!this.running && !this.stopped) void this.run();
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.full || this.pending.size) {
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

  private markLoaded(): void {
    if (this.loadedOnce) return;
    this.loadedOnce = true;
    for (const w of this.waiters.splice(0)) w();
  }
}
