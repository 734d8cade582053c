import type { BookEntry } from '../odds/book.js';

/**
 * A stage of the fan-out that a publisher's ack may wait on (the publish
 * queue, the sockets' buffers): asked through these methods, so no caller
 * reads another stage's queues.
 */
export interface Pressure {
  /** Publishing faster now would only queue more in memory. */
  busy(): boolean;
  /** Resolves once it is no longer busy; at once when it is not. */
  eased(): Promise<void>;
}

/**
 * Images are published in batches, once per turn of the event loop, from
 * outside any socket's callback. uWS writes a subscriber's queued frames in
 * one corked write only when no other socket is corked; publishing straight
 * from a publisher's message handler (a corked socket) degraded past
 * saturation to one write per frame. Batched, every socket gets many frames
 * per write, and everything queued in a turn goes out in that turn.
 */
export class PublishBatch {
  private queue: BookEntry[] = [];
  private waiters: (() => void)[] = [];
  private scheduled: NodeJS.Immediate | undefined;

  constructor(private readonly publish: (entry: BookEntry) => void) {}

  get size(): number {
    return this.queue.length;
  }

  add(entry: BookEntry): void {
    this.queue.push(entry);
    this.scheduled ??= setImmediate(() => this.flush());
  }

  /** Publishes everything queued, in order; called before anything that must come after it. */
  flush(): void {
    clearImmediate(this.scheduled);
    this.scheduled = undefined;
    const queue = this.queue;
    this.queue = [];
    for (const entry of queue) this.publish(entry);
    for (const ok of this.waiters.splice(0)) ok();
  }

  /** Resolves once everything queued so far has been published. */
  flushed(): Promise<void> {
    return this.queue.length ? new Promise((ok) => this.waiters.push(ok)) : Promise.resolve();
  }

  stop(): void {
    this.flush();
  }
}
