import { errors, type ServiceError } from '../errors.js';
import type { IngestResult } from './ingest.js';

export type Outcome = { ok: IngestResult } | { err: unknown };

interface Queued {
  data: unknown;
  answer: (outcome: Outcome) => void;
  /** Refused when it arrived (lane full or closing), answered in its place. */
  refusal?: ServiceError;
}

/**
 * One publisher connection's batches, taking effect in the order sent: a
 * batch starts only once the one before it is done, whatever each holds (a
 * batch waiting on a transaction is not overtaken by a later odds-only one).
 * Batches in flight are bounded; past the bound a batch is refused (it is
 * not applied) and the publisher is told to wait for its acks.
 */
export class Lane {
  private readonly queue: Queued[] = [];
  private running = false;
  /** Set by close or revoke: batches arriving from now on are refused with it. */
  private closing: ServiceError | undefined;
  /** Set by revoke: batches already queued are refused with it too, never started. */
  private revoked: ServiceError | undefined;
  private idle: (() => void)[] = [];

  constructor(private readonly run: (data: unknown) => Promise<IngestResult>, private readonly max: number) {}

  /** Runs a batch after those before it; `answer` is called once, in order, before the next batch starts. */
  submit(data: unknown, answer: (outcome: Outcome) => void): void {
    const inFlight = this.queue.length + (this.running ? 1 : 0);
    const refusal = this.closing ?? (inFlight >= this.max ? errors.batchesInFlight(this.max) : undefined);
    // A refusal is answered in its place too, so acks always come back in the order sent; past
    // twice the bound (a publisher ignoring its acks) order gives way to bounded memory.
    if (refusal && inFlight >= 2 * this.max) return answer({ err: refusal });
    this.queue.push({ data, answer, refusal });
    void this.pump();
  }

  /** Shutdown: takes no more batches; resolves once every batch taken so far has been answered. */
  close(): Promise<void> {
    this.closing ??= errors.shuttingDown();
    return this.settled();
  }

  /**
   * The key was revoked: no batch not yet started will start. The one running
   * (which checks the key itself before it publishes) is answered first, then
   * every other at once with `refusal`; resolves when all are answered.
   */
  revoke(refusal: ServiceError): Promise<void> {
    this.revoked = this.closing = refusal;
    return this.settled();
  }

  private settled(): Promise<void> {
    return this.running || this.queue.length ? new Promise((ok) => this.idle.push(ok)) : Promise.resolve();
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    for (let b = this.queue.shift(); b; b = this.queue.shift()) {
      const refusal = b.refusal ?? this.revoked;
      let outcome: Outcome;
      try {
        if (refusal) throw refusal;
        outcome = { ok: await this.run(b.data) };
      } catch (err) {
        outcome = { err };
      }
      b.answer(outcome);
    }
    this.running = false;
    for (const ok of this.idle.splice(0)) ok();
  }
}
