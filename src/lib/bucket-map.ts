import type { Clock } from './clock.js';
import { TokenBucket } from './token-bucket.js';

/**
 * A token bucket per name (an address, an API key, a key ID), bounded: the
 * names are chosen by strangers. A full bucket is the same as a new one, so
 * when the map is full those go first; if every name is still spending, the
 * oldest go (a name forgotten early gets a fresh allowance, which a bounded
 * map has to allow).
 */
export class BucketMap {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(private readonly perSecond: number, private readonly max: number, private readonly clock: Pick<Clock, 'now'>, private readonly burst = perSecond) {}

  /** Spends a token of `name`'s bucket: undefined when there was one, else the empty bucket (for its Retry-After). */
  spend(name: string): TokenBucket | undefined {
    let b = this.buckets.get(name);
    if (!b) {
      if (this.buckets.size >= this.max) this.evict();
      this.buckets.set(name, (b = new TokenBucket(this.perSecond, this.clock, this.burst)));
    }
    return b.spend(1) ? undefined : b;
  }

  get size(): number {
    return this.buckets.size;
  }

  private evict(): void {
    for (const [k, b] of this.buckets) if (b.full()) this.buckets.delete(k);
    // Still full: drop the oldest eighth at once, so a flood of new names does not sweep the map on every call.
    let drop = this.buckets.size >= this.max ? Math.max(1, this.max >> 3) : 0;
    for (const k of this.buckets.keys()) {
      if (drop-- <= 0) break;
      this.buckets.delete(k);
    }
  }
}
