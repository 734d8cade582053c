/**
 * Where a run of encoded ingest items is cut into batches the service takes in one go, keeping
 * their order of effect. Within a batch the service commits reference rows before it publishes
 * the feed's items (odds images, stale marks), so a reference item that follows a feed item (a
 * market's close after its last image) starts a new batch.
 */
export const BATCH_LIMITS = {
  items: 500,
  /** Well under the service's 1 MiB message limit (MAX_BODY_BYTES). */
  bytes: 512 * 1024,
} as const;

export class Batcher {
  private items: string[] = [];
  private bytes = 0;
  private hasFeed = false;

  get size(): number {
    return this.items.length;
  }

  /** Whether the item may join the batch being filled; an empty batch takes anything. */
  fits(json: string, feed: boolean): boolean {
    if (!this.items.length) return true;
    return this.items.length < BATCH_LIMITS.items && this.bytes + json.length <= BATCH_LIMITS.bytes && (feed || !this.hasFeed);
  }

  add(json: string, feed: boolean): void {
    this.items.push(json);
    this.bytes += json.length + 1;
    this.hasFeed ||= feed;
  }

  /** The batch filled so far (possibly empty); the next item starts a new one. */
  take(): string[] {
    const batch = this.items;
    this.items = [];
    this.bytes = 0;
    this.hasFeed = false;
    return batch;
  }
}
