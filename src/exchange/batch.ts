/**
 * Where a run of encoded ingest items is cut into batches the service takes in one go, keeping
 * their order of effect. A batch is either the feed (odds images, stale marks, judged one by one)
 * or one group of reference rows, never both: the service takes a batch's reference rows all or
 * nothing, so each market's rows, and the sport, league and event rows its definition made, go
 * in batches of their own, and one market's bad definition refuses no other market's items.
 */
export const BATCH_LIMITS = {
  items: 500,
  /** Well under the service's default 1 MiB message limit. */
  bytes: 512 * 1024,
} as const;

export interface BatchLimits {
  /** Items a batch may hold. */
  readonly items: number;
  /** Bytes its items may hold on the wire (UTF-8), a comma each included. */
  readonly bytes: number;
}

/** What a batch holds: the feed, or the reference rows of one group (see `Encoded.group` in outbox.ts). */
const FEED = '';

export class Batcher {
  private items: string[] = [];
  private bytes = 0;
  private kind = FEED;

  constructor(private readonly limits: BatchLimits = BATCH_LIMITS) {}

  get size(): number {
    return this.items.length;
  }

  /**
   * Whether an item of `bytes` may join the batch being filled: a feed item (`group` undefined)
   * joins the feed, a reference row only its own group; an empty batch takes anything.
   */
  fits(bytes: number, group?: string): boolean {
    if (!this.items.length) return true;
    return this.items.length < this.limits.items && this.bytes + bytes + 1 <= this.limits.bytes && (group ?? FEED) === this.kind;
  }

  add(json: string, bytes: number, group?: string): void {
    this.items.push(json);
    this.bytes += bytes + 1;
    this.kind = group ?? FEED;
  }

  /** The batch filled so far (possibly empty); the next item starts a new one. */
  drain(): string[] {
    const batch = this.items;
    this.items = [];
    this.bytes = 0;
    this.kind = FEED;
    return batch;
  }
}
