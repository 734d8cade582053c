import { errors } from '../errors.js';
import type { Ingest, IngestResult } from './ingest.js';

export type Outcome = { ok: IngestResult } | { err: unknown };

/**
 * One publisher connection's batches, taking effect in the order sent: a
 * batch starts only once the one before it is done, whatever each holds (a
 * batch waiting on a transaction is not overtaken by a later odds-only one).
 * Batches in flight are bounded; past the bound a batch is refused (it is
 * not applied) and the publisher is told to wait for its acks.
 */
export class Lane {
  private tail: Promise<void> = Promise.resolve();
  private inFlight = 0;
  private closed = false;

  constructor(private readonly ingest: Ingest, private readonly max: number) {}

  /** Runs a batch after those before it; `answer` is called once, in order, before the next batch starts. */
  submit(data: unknown, answer: (outcome: Outcome) => void): void {
    const refusal = this.closed
      ? errors.notReady('the server is shutting down; send this batch to another pod (it was not applied)')
      : this.inFlight >= this.max
        ? errors.limit(`${this.max} batches are already in flight on this connection; wait for their acks before sending more (this batch was not applied)`)
        : undefined;
    // A refusal is answered in its place too, so acks always come back in the order sent; past
    // twice the bound (a publisher ignoring its acks) order gives way to bounded memory.
    if (refusal && this.inFlight >= 2 * this.max) return answer({ err: refusal });
    this.inFlight++;
    this.tail = this.tail
      .then(() => (refusal ? Promise.reject(refusal) : this.ingest.accept(data)))
      .then((ok) => answer({ ok }), (err: unknown) => answer({ err }))
      .finally(() => this.inFlight--);
  }

  /** Takes no more batches; resolves once every batch taken so far has been answered. */
  async close(): Promise<void> {
    this.closed = true;
    // Batches that arrive meanwhile are refused in their place; wait for those answers too.
    for (let tail = this.tail; ; tail = this.tail) {
      await tail;
      if (tail === this.tail) return;
    }
  }
}
