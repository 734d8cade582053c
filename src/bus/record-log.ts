import { Fifo } from '../lib/fifo.js';
import { systemClock, type Clock } from '../lib/clock.js';
import type { RecordBacklog, RecordBatch, RecordEntry, RecordLog } from './types.js';

/**
 * Told of each entry appended, and of entries lost: dropped unread past the log's bound (`log`),
 * not handed to the bus because it was down (`unsent`), or unreadable when read back (`invalid`).
 */
export interface RecordLogCounts {
  appended(): void;
  dropped(n: number, where: 'log' | 'unsent' | 'invalid'): void;
}

/**
 * The record's log in one process (BUS=memory): a queue the pod's own recorder drains. Bounded in
 * entries: past `max` the oldest unread entry is dropped (counted), so the queue keeps the newest
 * and, once the recorder catches up, the record is current again with the gap in the past.
 * Entries are kept as objects, never encoded: an odds image shares the book's.
 */
export class MemoryRecordLog implements RecordLog {
  readonly redeliverMs = 0;
  private readonly queue = new Fifo<RecordEntry>();
  private wake: (() => void) | undefined;
  /** While a batch gathers: how many it wants, and what ends its wait. */
  private gathering: { want: number; done: () => void } | undefined;

  constructor(private readonly max: number, private readonly counts: RecordLogCounts, private readonly clock: Clock = systemClock) {}

  append(e: RecordEntry): void {
    if (this.queue.size >= this.max) {
      this.queue.shift();
      this.counts.dropped(1, 'log');
    }
    this.queue.push(e);
    this.counts.appended();
    this.wake?.();
    if (this.gathering && this.queue.size >= this.gathering.want) this.gathering.done();
  }

  async next(max: number, signal: AbortSignal, gatherMs = 0, idleMs?: number): Promise<RecordBatch | undefined> {
    await this.first(signal, idleMs);
    if (!this.queue.size) return undefined;
    if (gatherMs > 0 && this.queue.size < max && !signal.aborted) await this.gather(max, gatherMs, signal);
    const entries: RecordEntry[] = [];
    while (entries.length < max && this.queue.size) {
      entries.push(this.queue.peek()!);
      this.queue.shift();
    }
    // Taken at once, so nothing reached the queue between its last entry taken and this instant.
    return { entries, drainedAt: this.queue.size ? undefined : this.clock.now(), ack: () => undefined };
  }

  async backlog(): Promise<RecordBacklog> {
    return { entries: this.queue.size, bytes: undefined };
  }

  /** Until an entry waits, `signal` aborts, or `idleMs` pass. */
  private async first(signal: AbortSignal, idleMs?: number): Promise<void> {
    let idle = false;
    const timer = idleMs === undefined ? undefined : this.clock.after(idleMs, () => {
      idle = true;
      this.wake?.();
    });
    while (!this.queue.size) {
      if (signal.aborted || idle) break;
      await new Promise<void>((ok) => {
        const done = () => {
          this.wake = undefined;
          signal.removeEventListener('abort', done);
          ok();
        };
        this.wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
    timer?.stop();
  }

  /** Until `want` entries wait, `ms` have passed, or `signal` aborts (a stop writes what waits at once). */
  private gather(want: number, ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((ok) => {
      const done = () => {
        timer.stop();
        this.gathering = undefined;
        signal.removeEventListener('abort', done);
        ok();
      };
      const timer = this.clock.after(ms, done);
      this.gathering = { want, done };
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
