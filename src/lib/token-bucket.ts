/**
 * A rate limit as a token bucket: a burst of one second's allowance, refilled
 * continuously. Shared by REST (per API key) and sockets (per socket), so both
 * limits mean the same thing.
 */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(private readonly perSecond: number, now = Date.now()) {
    this.tokens = perSecond;
    this.at = now;
  }

  /** Spends one token if there is one. */
  take(now = Date.now()): boolean {
    this.tokens = Math.min(this.perSecond, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Whole seconds until a token is back, at least 1 (for Retry-After). */
  retryAfterS(): number {
    return Math.max(1, Math.ceil((1 - this.tokens) / this.perSecond));
  }

  /** A full bucket behaves exactly like a new one, so a map of buckets may drop it. */
  full(now = Date.now()): boolean {
    return this.tokens + ((now - this.at) / 1000) * this.perSecond >= this.perSecond;
  }
}
