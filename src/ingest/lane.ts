import { errors } from '../errors.js';
import type { Ingest, IngestResult } from './ingest.js';

export type Outcome = { ok: IngestResult } | { err: unknown };

/**
 * One publisher connection's batches, taking effect in the order sent: a
 * batch starts only once the one before it is done, whatever each holds (a
 * batch waiting on a transaction is not overtaken by a later odds-only one).
 * Batches in flight are bounded; past the bound a batch is refused, not
 * queued, and the publisher is told to wait for its acks.
 */
export class Lane {
  private tail: Promise<void> = Promise.resolve();
  private inFlight = 0;
  private closed = false;

  constructor(private readonly ingest: Ingest, private readonly max: number) {}

  get pending(): number {
    return this.inFlight;
  }

  /** Runs a batch after those before it; `answer` is called once, in order, before the next batch starts. */
  submit(data: unknown, answer: (outcome: Outcome) => void): void {
    if (this.closed) return answer({ err: errors.notReady('the server is shutting down; send this batch to another pod (it was not applied)') });
    if (this.inFlight >= this.max) {
      return answer({ err: errors.limit(`${this.max} batches are already in flight on this connection; wait for their acks before sending more (this batch was not applied)`) });
    }
    this.inFlight++;
    this.tail = this.tail
      .then(() => this.ingest.accept(data))
      .then((ok) => answer({ ok }), (err: unknown) => answer({ err }))
      .finally(() => this.inFlight--);
  }

  /** Takes no more batches; resolves once every batch taken so far has been answered. */
  async close(): Promise<void> {
    this.closed = true;
    await this.tail;
  }
}
