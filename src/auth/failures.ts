import { errors, type ServiceError } from '../errors.js';
import { TokenBucket } from '../lib/token-bucket.js';
import type { Logger } from '../log.js';

interface FailureLimits {
  /** Wrong keys one source may send at once; 0 turns the throttle off. */
  burst: number;
  /** Wrong keys per second a source earns back. */
  perSecond: number;
  /** Sources remembered at most; past it the one known longest is forgotten. */
  sources: number;
}

/** At most one warning line per this long, with how many failures it stands for. */
const LOG_EVERY_MS = 10_000;

/**
 * Wrong API keys, throttled per source address (the TCP peer). Each wrong key
 * spends a token of the source's bucket; once it is empty every request from
 * that source that needs a key is answered 429 with Retry-After before its
 * key is even looked at, a right key included: a guesser learns nothing
 * while throttled, and the hash is not computed. Keys are never logged.
 */
export class FailedKeys {
  private readonly bySource = new Map<string, TokenBucket>();
  private unlogged = 0;
  private loggedAt = 0;

  constructor(private readonly limits: FailureLimits, private readonly log: Logger) {}

  /** The refusal (429) when the source has used up its wrong keys. */
  check(source: string): ServiceError | undefined {
    const b = this.bySource.get(source);
    return b && !b.has() ? errors.tooManyFailures(b.retryAfterS()) : undefined;
  }

  /** Counts a wrong key from the source. */
  failed(source: string, reason: string): void {
    if (this.limits.burst <= 0) return;
    let b = this.bySource.get(source);
    if (!b) {
      if (this.bySource.size >= this.limits.sources) this.evict();
      this.bySource.set(source, (b = new TokenBucket(this.limits.perSecond, Date.now(), this.limits.burst)));
    }
    b.take();
    this.unlogged++;
    const now = Date.now();
    if (now - this.loggedAt < LOG_EVERY_MS) return;
    this.log.warn('requests with a wrong API key', { source, reason, failures: this.unlogged, sinceMs: this.loggedAt ? now - this.loggedAt : undefined });
    this.unlogged = 0;
    this.loggedAt = now;
  }

  /** The source known longest goes: constant time, however many addresses a sprayer uses. */
  private evict(): void {
    this.bySource.delete(this.bySource.keys().next().value!);
  }
}
