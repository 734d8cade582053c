import type { IngestItemInput } from '../odds/messages.js';

/**
 * Cuts a run of ingest items into batches the service takes in one go, keeping their order of
 * effect. Within a batch the service commits reference rows before it publishes odds, so a
 * reference item that follows an odds item (a market's close after its last image) starts a new
 * batch. Items are encoded once, here, and sent as they are.
 */
export const BATCH_LIMITS = {
  items: 500,
  /** Well under the service's 1 MiB message limit (MAX_BODY_BYTES). */
  bytes: 512 * 1024,
} as const;

export class Batcher {
  private items: string[] = [];
  private bytes = 0;
  private hasOdds = false;

  /** Adds an item; returns the batch it closed, if it closed one. */
  add(item: IngestItemInput): string[] | undefined {
    const json = JSON.stringify(item);
    const odds = item.kind === 'odds';
    const full = this.items.length >= BATCH_LIMITS.items || this.bytes + json.length > BATCH_LIMITS.bytes || (this.hasOdds && !odds);
    const closed = full && this.items.length ? this.take() : undefined;
    this.items.push(json);
    this.bytes += json.length + 1;
    this.hasOdds ||= odds;
    return closed;
  }

  /** The batch being filled, if it holds anything; the next item starts a new one. */
  take(): string[] | undefined {
    if (!this.items.length) return undefined;
    const batch = this.items;
    this.items = [];
    this.bytes = 0;
    this.hasOdds = false;
    return batch;
  }
}
