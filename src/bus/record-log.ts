import { Fifo } from '../lib/fifo.js';
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
  private readonly queue = new Fifo<RecordEntry>();
  private wake: (() => void) | undefined;

  constructor(private readonly max: number, private readonly counts: RecordLogCounts) {}

  append(e: RecordEntry): void {
    if (this.queue.size >= this.max) {
      this.queue.shift();
      this.counts.dropped(1, 'log');
    }
    this.queue.push(e);
    this.counts.appended();
    this.wake?.();
  }

  async next(max: number, signal: AbortSignal): Promise<RecordBatch | undefined> {
    while (!this.queue.size) {
      if (signal.aborted) return undefined;
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
    const entries: RecordEntry[] = [];
    while (entries.length < max && this.queue.size) {
      entries.push(this.queue.peek()!);
      this.queue.shift();
    }
    return { entries, ack: () => undefined };
  }

  async backlog(): Promise<RecordBacklog> {
    return { entries: this.queue.size, bytes: undefined };
  }
}
