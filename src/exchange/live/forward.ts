/**
 * Live market changes to the service: each change translated at once (the
 * translator keeps the books), its items cut into batches and sent in order
 * through the pipelined publisher. The exchange pushes and cannot be paused,
 * so batches wait in a queue while the publisher's window is full; a service
 * that falls that far behind (`maxWaiting` batches) stops the forwarder
 * rather than letting the queue grow without end.
 */
import { Fifo } from '../../lib/fifo.js';
import { Batcher } from '../batch.js';
import { PublishError, type Publisher } from '../publisher.js';
import type { MarketChangeMessage } from '../stream.js';
import type { Translator } from '../translate.js';

const MAX_WAITING_BATCHES = 1000;

interface ForwardStats {
  changes: number;
  images: number;
  /** Changes the translator refused (each reported through `problem`). */
  refused: number;
  batches: number;
}

export class Forwarder {
  readonly stats: ForwardStats = { changes: 0, images: 0, refused: 0, batches: 0 };
  /** Settles with the reason once the forwarder can send no more. */
  readonly failed: Promise<PublishError>;
  private readonly batcher = new Batcher();
  private readonly waiting = new Fifo<string[]>();
  private pumping = false;
  private failure: PublishError | undefined;
  private fail!: (err: PublishError) => void;

  constructor(
    private readonly translator: Translator,
    private readonly publisher: Publisher,
    private readonly problem: (text: string) => void,
    private readonly maxWaiting = MAX_WAITING_BATCHES,
  ) {
    this.failed = new Promise((ok) => (this.fail = (err) => {
      if (this.failure) return;
      this.failure = err;
      this.waiting.clear();
      ok(err);
    }));
  }

  /** Translates one change and queues what it yields; the change's items go out together, without waiting for more. */
  push(msg: MarketChangeMessage, where: string): void {
    if (this.failure || msg.ct === 'HEARTBEAT') return;
    const out = this.translator.apply(msg, where);
    if (out.errors.length) {
      this.stats.refused++;
      for (const e of out.errors) this.problem(e);
      return;
    }
    this.stats.changes++;
    this.stats.images += out.images;
    for (const item of out.items) this.queue(this.batcher.add(item));
    this.queue(this.batcher.take());
    if (!this.pumping) void this.pump();
  }

  /** Resolves once everything pushed so far is acked; rejects with the failure. */
  async flush(): Promise<void> {
    while (this.pumping && !this.failure) await Promise.race([this.publisher.flush(), this.failed]);
    if (this.failure) throw this.failure;
    await this.publisher.flush();
  }

  private queue(batch: string[] | undefined): void {
    if (!batch) return;
    if (this.waiting.size >= this.maxWaiting) return this.fail(new PublishError(`the service is not keeping up: ${this.maxWaiting} batches wait to be sent`));
    this.waiting.push(batch);
  }

  private async pump(): Promise<void> {
    this.pumping = true;
    try {
      for (let batch = this.waiting.peek(); batch && !this.failure; batch = this.waiting.peek()) {
        await this.publisher.room();
        this.waiting.shift();
        this.stats.batches++;
        this.publisher.sendEncoded(batch).catch((err: PublishError) => this.fail(err));
      }
    } catch (err) {
      this.fail(err instanceof PublishError ? err : new PublishError((err as Error).message));
    } finally {
      this.pumping = false;
    }
  }
}
