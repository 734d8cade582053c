/**
 * A rate limit as a token bucket: a burst (one second's allowance unless
 * given), refilled continuously. Shared by REST (per API key), sockets (per
 * socket and per key, in messages and in bytes) and wrong keys (per source),
 * so every limit means the same thing.
 */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(private readonly perSecond: number, now = Date.now(), private readonly burst = perSecond) {
    this.tokens = burst;
    this.at = now;
  }

  /** Spends `cost` tokens if there are that many. */
  take(cost = 1, now = Date.now()): boolean {
    this.refill(now);
    if (this.tokens < cost) return false;
    this.tokens -= cost;
    return true;
  }

  /** Whether a token is there, spending nothing. */
  has(now = Date.now()): boolean {
    this.refill(now);
    return this.tokens >= 1;
  }

  /** Whole seconds until a token is back, at least 1 (for Retry-After). */
  retryAfterS(): number {
    return Math.max(1, Math.ceil((1 - this.tokens) / this.perSecond));
  }

  /** A full bucket behaves exactly like a new one, so a map of buckets may drop it. */
  full(now = Date.now()): boolean {
    return this.tokens + ((now - this.at) / 1000) * this.perSecond >= this.burst;
  }

  private refill(now: number): void {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
  }
}
