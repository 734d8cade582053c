import type { BookEntry } from '../odds/book.js';

/**
 * A stage that a publisher's ack may wait on while the service cannot keep up
 * (the publish queue, the event loop): asked through these methods, so no
 * caller reads another stage's queues. What sockets hold is never one: a
 * socket that does not read is handled alone (sweep.ts).
 */
export interface Pressure {
  /** Publishing faster now would only queue more in memory. */
  busy(): boolean;
  /** Resolves once it is no longer busy; at once when it is not. */
  eased(): Promise<void>;
}

/**
 * Images waiting to be published, drained by the broadcaster once per turn
 * of the event loop, from outside any socket's callback. uWS writes a
 * subscriber's queued frames in one corked write only when no other socket is
 * corked; publishing straight from a publisher's message handler (a corked
 * socket) degraded past saturation to one write per frame. Batched, every
 * socket gets many frames per write, and everything queued in a turn goes out
 * in that turn.
 */
export class PublishBatch {
  private queue: BookEntry[] = [];
  /** The markets queued: their topics have not yet handed out their newest image. */
  private readonly mids = new Set<string>();

  get size(): number {
    return this.queue.length;
  }

  /** Queues an image; true when the queue was empty, so its owner schedules a drain. */
  add(entry: BookEntry): boolean {
    this.queue.push(entry);
    this.mids.add(entry.marketId);
    return this.queue.length === 1;
  }

  holds(mid: string): boolean {
    return this.mids.has(mid);
  }

  /** Everything queued, in order, leaving the queue empty. */
  drain(): BookEntry[] {
    const queue = this.queue;
    this.queue = [];
    this.mids.clear();
    return queue;
  }
}
