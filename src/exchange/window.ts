/**
 * What a publisher may have in flight on its `/ingest` connection, from the bounds the service
 * announced at the handshake (ingest/limits.ts): batches unanswered by count and by their bytes on
 * the wire, as the service's lane counts them (ingest/lane.ts: a connection holding nothing may
 * always send one batch). One batch and a heartbeat's bytes are kept spare, so a heartbeat sent
 * while the window is full is not refused; the bytes are the connection's bound or its key's,
 * whichever is less. A service that announces nothing gets one batch at a time, which any
 * configuration takes. It also says how large a batch to cut: within the service's items and
 * message size, and a quarter of the byte window, so that batches keep flowing while earlier
 * ones are acked.
 */
import type { IngestLimits } from '../ingest/limits.js';
import { BATCH_LIMITS, type BatchLimits } from './batch.js';

/** `{"id":4294967295,"data":[` and `]}`: what a message holds beyond its items. */
export const ENVELOPE_BYTES = 28;
/** Kept spare in the byte window for a heartbeat (an empty batch, at most ENVELOPE_BYTES). */
const HEARTBEAT_BYTES = 32;
/** The batch is at most this share of the byte window. */
const BATCH_SHARE = 4;

export class Window {
  /** How large a batch to cut. */
  readonly batch: BatchLimits;
  /** The largest message the service takes: a larger one would close the socket. */
  readonly maxMessageBytes: number;
  private readonly maxCount: number;
  private readonly maxBytes: number;
  private count = 0;
  private bytes = 0;

  /** `wanted`: the most batches the publisher itself keeps in flight. */
  constructor(limits: IngestLimits | undefined, wanted: number) {
    if (!limits) {
      this.maxCount = 1;
      this.maxBytes = Infinity;
      this.maxMessageBytes = Infinity;
      this.batch = BATCH_LIMITS;
      return;
    }
    this.maxCount = Math.max(1, Math.min(wanted, limits.maxInFlight - 1));
    this.maxBytes = Math.min(limits.queueBytes, limits.keyQueueBytes) - HEARTBEAT_BYTES;
    this.maxMessageBytes = limits.maxMessageBytes;
    this.batch = {
      items: Math.min(BATCH_LIMITS.items, limits.maxItems),
      bytes: Math.max(1, Math.min(BATCH_LIMITS.bytes, limits.maxMessageBytes - ENVELOPE_BYTES, Math.floor(this.maxBytes / BATCH_SHARE))),
    };
  }

  /** Batches in flight. */
  get size(): number {
    return this.count;
  }

  /** Whether a batch of `bytes` may go now. */
  fits(bytes: number): boolean {
    return this.count < this.maxCount && (this.bytes === 0 || this.bytes + bytes <= this.maxBytes);
  }

  add(bytes: number): void {
    this.count++;
    this.bytes += bytes;
  }

  remove(bytes: number): void {
    this.count--;
    this.bytes -= bytes;
  }
}
