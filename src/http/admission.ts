import { errors, type ServiceError } from '../errors.js';
import { TokenBucket } from '../lib/token-bucket.js';

/** Rates per second; 0 turns that limit off. */
interface AdmissionLimits {
  handshakesPerSource: number;
  handshakesTotal: number;
  subscribesPerSource: number;
  subscribesTotal: number;
  /** Source addresses remembered at once: the per-source buckets are a structure strangers grow. */
  maxSources: number;
}

/** Which limit said no, for the metrics. */
type AdmissionScope = 'handshake_source' | 'handshake_total' | 'subscribe_source' | 'subscribe_total';

/**
 * Per-source buckets, bounded. A full bucket is the same as a new one, so
 * when the map is full those go first; if every source is still spending,
 * the oldest entries go (a source forgotten early gets a fresh second's
 * allowance, which a bounded map has to allow).
 */
class SourceBuckets {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(private readonly perSecond: number, private readonly max: number) {}

  take(source: string, now: number): TokenBucket | undefined {
    let b = this.buckets.get(source);
    if (!b) {
      if (this.buckets.size >= this.max) this.evict(now);
      this.buckets.set(source, (b = new TokenBucket(this.perSecond, now)));
    }
    return b.take(1, now) ? undefined : b;
  }

  get size(): number {
    return this.buckets.size;
  }

  private evict(now: number): void {
    for (const [k, b] of this.buckets) if (b.full(now)) this.buckets.delete(k);
    // Still full: drop the oldest eighth at once, so a flood of new sources does not sweep the map on every handshake.
    let drop = this.buckets.size >= this.max ? Math.max(1, this.max >> 3) : 0;
    for (const k of this.buckets.keys()) {
      if (drop-- <= 0) break;
      this.buckets.delete(k);
    }
  }
}

/** One kind of admission (handshakes or subscribes): a bucket per source and one for the pod. */
class Gate {
  private readonly sources: SourceBuckets | undefined;
  private readonly total: TokenBucket | undefined;

  constructor(private readonly perSource: number, private readonly perPod: number, maxSources: number) {
    this.sources = perSource ? new SourceBuckets(perSource, maxSources) : undefined;
    this.total = perPod ? new TokenBucket(perPod) : undefined;
  }

  /** The bucket that refused, and which; the pod's bucket is spent only when the source's allowed it. */
  take(source: string, now: number): { scope: 'source' | 'total'; bucket: TokenBucket; rate: number } | undefined {
    const mine = this.sources?.take(source, now);
    if (mine) return { scope: 'source', bucket: mine, rate: this.perSource };
    if (this.total && !this.total.take(1, now)) return { scope: 'total', bucket: this.total, rate: this.perPod };
    return undefined;
  }

  get sourcesHeld(): number {
    return this.sources?.size ?? 0;
  }
}

/**
 * What keeps a reconnect storm from starving the sockets already served: a
 * pod accepts new subscriber sockets, and subscribe requests, at a bounded
 * rate per source address and in total. A refused handshake is answered
 * 429 (this source) or 503 (this pod; another may take it) with
 * `Retry-After`; a refused subscribe is an ack with status 0 that says when
 * to try again. Both are cheap: a map lookup and two token buckets.
 */
export class Admission {
  private readonly handshakes: Gate;
  private readonly subscribes: Gate;

  constructor(limits: AdmissionLimits, private readonly refused: (scope: AdmissionScope) => void = () => undefined) {
    this.handshakes = new Gate(limits.handshakesPerSource, limits.handshakesTotal, limits.maxSources);
    this.subscribes = new Gate(limits.subscribesPerSource, limits.subscribesTotal, limits.maxSources);
  }

  /** Why a handshake from this source may not open a socket now, or undefined when it may. */
  handshake(source: string, now = Date.now()): ServiceError | undefined {
    const no = this.handshakes.take(source, now);
    if (!no) return undefined;
    this.refused(`handshake_${no.scope}`);
    return errors.handshakeRate(no.scope, no.rate, no.bucket.retryAfterS());
  }

  /** Why a subscribe request from this source may not be served now, or undefined. */
  subscribe(source: string, now = Date.now()): ServiceError | undefined {
    const no = this.subscribes.take(source, now);
    if (!no) return undefined;
    this.refused(`subscribe_${no.scope}`);
    return errors.subscribeRate(no.scope, no.rate, no.bucket.retryAfterS());
  }

  /** Source addresses held by the per-source buckets (bounded by maxSources each). */
  get sources(): number {
    return this.handshakes.sourcesHeld + this.subscribes.sourcesHeld;
  }
}

