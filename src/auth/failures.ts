import { errors, type ServiceError } from '../errors.js';
import { BucketMap } from '../lib/bucket-map.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../log.js';

interface FailureLimits {
  /** Wrong keys one address, or one key ID, may send at once; 0 turns the throttle off. */
  burst: number;
  /** Wrong keys per second an address or key ID earns back. */
  perSecond: number;
  /** Addresses, and key IDs, remembered at most (each); past it full buckets, then the oldest, are forgotten. */
  sources: number;
}

/** At most one warning line per this long, with how many failures it stands for. */
const LOG_EVERY_MS = 10_000;

/**
 * Wrong API keys, throttled as attempts: per client address, and per key ID
 * presented (a guesser spread over many addresses still aims at one key).
 * Only wrong keys are counted and only wrong keys are refused: a right key is
 * served whatever others at its address or under its ID sent, so one client
 * (or everyone behind one proxy) cannot lock out another. Past the burst a
 * wrong key is answered 429 with Retry-After instead of 401. It costs what
 * any key costs (one hash, compared in constant time) plus two map lookups.
 * Keys are never logged; key IDs are not secret.
 */
export class FailedKeys {
  private readonly byAddress: BucketMap;
  private readonly byKeyId: BucketMap;
  private unlogged = 0;
  private loggedAt = 0;

  constructor(private readonly limits: FailureLimits, private readonly log: Logger, private readonly clock: Pick<Clock, 'now'>) {
    this.byAddress = new BucketMap(limits.perSecond, limits.sources, clock, limits.burst);
    this.byKeyId = new BucketMap(limits.perSecond, limits.sources, clock, limits.burst);
  }

  /**
   * Counts a wrong key from `address`, under `keyId` when it had the form of
   * a key. The 429 when that address or key ID had used up its attempts;
   * undefined when the caller should answer the usual 401.
   */
  failed(address: string, keyId: string | undefined, reason: string): ServiceError | undefined {
    if (this.limits.burst <= 0) return undefined;
    const fromAddress = this.byAddress.spend(address);
    const forKey = keyId === undefined ? undefined : this.byKeyId.spend(keyId);
    this.note(this.clock.now(), address, keyId, reason);
    if (fromAddress) return errors.tooManyFailures('address', fromAddress.retryAfterS());
    if (forKey) return errors.tooManyFailures('key', forKey.retryAfterS());
    return undefined;
  }

  private note(now: number, address: string, keyId: string | undefined, reason: string): void {
    this.unlogged++;
    if (now - this.loggedAt < LOG_EVERY_MS) return;
    this.log.warn('requests with a wrong API key', { address, keyId, reason, failures: this.unlogged, sinceMs: this.loggedAt ? now - this.loggedAt : undefined });
    this.unlogged = 0;
    this.loggedAt = now;
  }
}
