import { errors, type ServiceError } from '../errors.js';
import type { IngestResult, SentBy } from './ingest.js';
import type { Batch, BatchItems } from './batch.js';
import { ByteBudget } from '../lib/byte-budget.js';

/** What runs a lane's batches, one at a time, as sent by the lane's connection (ingest.ts: `Ingest`). */
export interface BatchRunner {
  accept(items: BatchItems, by: SentBy): Promise<IngestResult>;
}

export interface LaneLimits {
  /** Batches not yet answered, queued or running, past which a batch is refused. */
  maxInFlight: number;
  /** Their bytes, past which a batch is refused (the first one always fits). */
  maxBytes: number;
}

/**
 * Bytes of batches queued, not yet answered, per API key across its `/ingest`
 * connections and REST posts: a key cannot make the process hold more than
 * `max` however many connections it opens.
 */
export class KeyQueues extends ByteBudget<ServiceError> {
  constructor(max: number) {
    super(max, (held, most) => errors.ingestQueueFull('key', held, most));
  }
}

/** A lane's parts: what runs its batches, as whose, its bounds, and its key's share of the key's queues. */
export interface LaneDeps {
  ingest: BatchRunner;
  /** The connection the batches come from, as ingest and freshness know it. */
  by: SentBy;
  limits: LaneLimits;
  keys: KeyQueues;
  keyId: string;
}

interface Queued {
  /** None when it was refused on arrival: a refusal keeps no items. */
  batch?: Batch;
  bytes: number;
  refusal?: ServiceError;
  ok: (result: IngestResult) => void;
  fail: (err: unknown) => void;
}

/**
 * One publisher connection's batches, taking effect in the order sent: a
 * batch starts only once the one before it is done, whatever each holds (a
 * batch waiting on a transaction is not overtaken by a later odds-only one),
 * and each `submit` settles in that order. Batches not yet answered are
 * bounded in count and in bytes, on the connection and on its key; past a
 * bound a batch is refused (it is not applied) and the publisher is told to
 * wait for its acks.
 */
export class Lane {
  private readonly queue: Queued[] = [];
  private running = false;
  /** Bytes of the batches taken and not yet answered. */
  private bytes = 0;
  /** Set by close or revoke: batches arriving from now on are refused with it. */
  private closing: ServiceError | undefined;
  /** Set by revoke: batches already queued are refused with it too, never started. */
  private revoked: ServiceError | undefined;
  private idle: (() => void)[] = [];

  constructor(private readonly deps: LaneDeps) {}

  /** Runs a batch after those before it; resolves with its result, or rejects with why it was refused or failed. */
  submit(batch: Batch): Promise<IngestResult> {
    const refusal = this.boundRefusal(batch.bytes) ?? this.deps.keys.spend(this.deps.keyId, batch.bytes);
    // A refusal is answered in its place too, so acks always come back in the order sent; past
    // twice the bound (a publisher ignoring its acks) order gives way to bounded memory.
    if (refusal && this.inFlight() >= 2 * this.deps.limits.maxInFlight) return Promise.reject(refusal);
    if (!refusal) this.bytes += batch.bytes;
    const answered = new Promise<IngestResult>((ok, fail) => this.queue.push(refusal ? { bytes: 0, refusal, ok, fail } : { batch, bytes: batch.bytes, ok, fail }));
    void this.pump();
    return answered;
  }

  /**
   * Why the bounds refuse a batch of `bytes` now (closing, batches in flight, bytes queued on
   * this connection, then on its key), counting nothing: the socket asks before it reads a
   * message, with what the message would hold once read (`readBytes`), and leaves a refused one
   * unread, so a publisher past its bounds costs no memory, not even for a moment.
   */
  boundRefusal(bytes: number): ServiceError | undefined {
    if (this.closing) return this.closing;
    const { maxInFlight, maxBytes } = this.deps.limits;
    if (this.inFlight() >= maxInFlight) return errors.batchesInFlight(maxInFlight);
    if (this.bytes > 0 && this.bytes + bytes > maxBytes) return errors.ingestQueueFull('connection', this.bytes, maxBytes);
    return this.deps.keys.refuses(this.deps.keyId, bytes);
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

  /** Batches not yet answered, queued or running. */
  private inFlight(): number {
    return this.queue.length + (this.running ? 1 : 0);
  }

  private settled(): Promise<void> {
    return this.running || this.queue.length ? new Promise((ok) => this.idle.push(ok)) : Promise.resolve();
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    for (let q = this.queue.shift(); q; q = this.queue.shift()) {
      const refusal = q.refusal ?? this.revoked;
      try {
        if (refusal || !q.batch) throw refusal;
        q.ok(await this.deps.ingest.accept(q.batch.items, this.deps.by));
      } catch (err) {
        q.fail(err);
      } finally {
        this.bytes -= q.bytes;
        if (q.bytes) this.deps.keys.give(this.deps.keyId, q.bytes);
      }
    }
    this.running = false;
    for (const ok of this.idle.splice(0)) ok();
  }
}
