import type { Clock } from './clock.js';

/**
 * A rate limit as a token bucket: a burst (one second's allowance unless
 * given), refilled continuously as its clock moves. Shared by REST (per API
 * key), sockets (per socket and per key, in messages and in bytes) and wrong
 * keys (per source), so every limit means the same thing.
 */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(private readonly perSecond: number, private readonly clock: Pick<Clock, 'now'>, private readonly burst = perSecond) {
    this.tokens = burst;
    this.at = clock.now();
  }

  /** Spends `cost` tokens if there are that many. */
  spend(cost = 1): boolean {
    this.refill();
    if (this.tokens < cost) return false;
    this.tokens -= cost;
    return true;
  }

  /** Whether a token is there, spending nothing. */
  has(): boolean {
    this.refill();
    return this.tokens >= 1;
  }

  /** Whole seconds until a token is back, at least 1 (for Retry-After). */
  retryAfterS(): number {
    this.refill();
    return Math.max(1, Math.ceil((1 - this.tokens) / this.perSecond));
  }

  /** A full bucket behaves exactly like a new one, so a map of buckets may drop it. */
  full(): boolean {
    this.refill();
    return this.tokens >= this.burst;
  }

  private refill(): void {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
  }
}
