import { errors, type AdmissionSource, type ServiceError } from '../errors.js';
import { BucketMap } from '../lib/bucket-map.js';
import type { Clock } from '../lib/clock.js';
import { TokenBucket } from '../lib/token-bucket.js';

/** Rates per second; 0 turns that limit off. */
interface AdmissionLimits {
  handshakesPerSource: number;
  handshakesTotal: number;
  subscribesPerSource: number;
  subscribesTotal: number;
  /** Sources remembered at once: the per-source buckets are a structure strangers grow. */
  maxSources: number;
  /** What a source is: the caller's API key (AUTH=on), or its address (AUTH=off, where nobody has a key). */
  source: AdmissionSource;
}

/** Which limit said no, for the metrics. */
export type AdmissionScope = 'handshake_source' | 'handshake_total' | 'subscribe_source' | 'subscribe_total';

/** Told of each handshake and subscribe request admission refused: the metrics. */
export interface AdmissionRefusals {
  admissionRefused(scope: AdmissionScope): void;
}

/** One kind of admission (handshakes or subscribes): a bucket per source and one for the pod. */
class Gate {
  private readonly sources: BucketMap | undefined;
  private readonly total: TokenBucket | undefined;

  constructor(private readonly perSource: number, private readonly perPod: number, maxSources: number, clock: Pick<Clock, 'now'>) {
    this.sources = perSource ? new BucketMap(perSource, maxSources, clock) : undefined;
    this.total = perPod ? new TokenBucket(perPod, clock) : undefined;
  }

  /** The bucket that refused, and which; the pod's bucket is spent only when the source's allowed it. */
  spend(source: string): { scope: 'source' | 'total'; bucket: TokenBucket; rate: number } | undefined {
    const mine = this.sources?.spend(source);
    if (mine) return { scope: 'source', bucket: mine, rate: this.perSource };
    if (this.total && !this.total.spend()) return { scope: 'total', bucket: this.total, rate: this.perPod };
    return undefined;
  }

  get sourcesHeld(): number {
    return this.sources?.size ?? 0;
  }
}

/**
 * What keeps a reconnect storm from starving the sockets already served: a
 * pod accepts new subscriber sockets, and subscribe requests, at a bounded
 * rate per source and in total. A source is the caller's API key when keys
 * are in force, so one key's flood never holds back another caller sharing
 * its address (a proxy, an office); the caller's address only where nobody
 * has a key. A refused handshake is answered 429 (this source) or 503 (this
 * pod; another may take it) with `Retry-After`; a refused subscribe is an ack
 * with status 0 that says when to try again. Both are cheap: a map lookup and
 * two token buckets.
 */
export class Admission {
  private readonly handshakes: Gate;
  private readonly subscribes: Gate;
  private readonly source: AdmissionSource;

  constructor(limits: AdmissionLimits, private readonly refusals: AdmissionRefusals, clock: Pick<Clock, 'now'>) {
    this.handshakes = new Gate(limits.handshakesPerSource, limits.handshakesTotal, limits.maxSources, clock);
    this.subscribes = new Gate(limits.subscribesPerSource, limits.subscribesTotal, limits.maxSources, clock);
    this.source = limits.source;
  }

  /** Why a handshake from this source may not open a socket now, or undefined when it may. */
  handshake(source: string): ServiceError | undefined {
    const no = this.handshakes.spend(source);
    if (!no) return undefined;
    this.refusals.admissionRefused(`handshake_${no.scope}`);
    return errors.handshakeRate(no.scope, no.rate, no.bucket.retryAfterS(), this.source);
  }

  /** Why a subscribe request from this source may not be served now, or undefined. */
  subscribe(source: string): ServiceError | undefined {
    const no = this.subscribes.spend(source);
    if (!no) return undefined;
    this.refusals.admissionRefused(`subscribe_${no.scope}`);
    return errors.subscribeRate(no.scope, no.rate, no.bucket.retryAfterS(), this.source);
  }

  /** Sources held by the per-source buckets (bounded by maxSources each). */
  get sources(): number {
    return this.handshakes.sourcesHeld + this.subscribes.sourcesHeld;
  }
}
