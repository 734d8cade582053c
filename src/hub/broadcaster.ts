import { encodeFor } from '../odds/codec.js';
import { FORMATS, type Book, type BookEntry, type Format, type Frame } from '../odds/book.js';
import type { ClockMessage, FeedMessage, FeedStatus } from '../odds/messages.js';
import type { Logger } from '../log.js';
import type { OddsMetrics } from '../metrics/odds.js';
import type { Clock, Ticker } from '../lib/clock.js';
import { PublishBatch, type Pressure } from './publish-batch.js';
import { Conflator } from './conflate.js';
import type { Carried, MarketIndex, IndexedVariant } from './market-index.js';
import type { PublishWatcher } from './sweep.js';
import type { Publishing, Subscriber } from './subscriber.js';
import { FEED_TOPIC, topicOf, wireBytes, type Variant } from './variant.js';
import type { MarketStates, StateMessage } from './states.js';
import type { SocketLedger } from '../record/ledger.js';

/** Images queued for sockets past which a publisher's next batch waits for them to go out. */
const BACKLOG = 1000;

/** What the broadcaster needs of uWS's pub/sub: one call to publish, one to count. */
export interface Topics {
  publish(topic: string, frame: Frame, isBinary: boolean, compress?: boolean): boolean;
  numSubscribers(topic: string): number;
}

export interface BroadcasterDeps {
  topics: Topics;
  index: MarketIndex<Subscriber>;
  book: Book;
  states: MarketStates;
  metrics: OddsMetrics;
  log: Logger;
  clock: Clock;
  /** How often every socket is sent the server's time (`clock`, WS_CLOCK_MS); 0 never. */
  clockMs?: number;
  /** Frames are deflated for sockets that negotiated permessage-deflate (WS_COMPRESSION). */
  compress?: boolean;
  /** Told what each conflated variant sends (the record; `UNRECORDED` with RECORD=off): its sockets' ledgers read it. */
  ledger: Pick<SocketLedger, 'conflated'>;
}

/**
 * Fan-out of the book to sockets: it encodes and publishes, and hands nothing to a socket itself.
 * Each market has one uWS topic per variant that someone takes (format, depth, conflation
 * preset); an update is encoded once per variant and published, so nothing is built per
 * subscriber. It drains two queues of its own: the publish batch, once per turn of the loop, and
 * the conflator, once per interval. Which topics a socket is on, and what it is sent directly, is
 * the socket's own (subscriber.ts), which reads here what its topics handed it; the sweep is told
 * what was published. The only writer of `MarketStates` and of what each topic carried.
 */
export class Broadcaster implements Pressure, Publishing {
  private readonly conflator = new Conflator();
  /** One timer per conflation interval in use. */
  private readonly timers = new Map<number, Ticker>();
  /** Images queued for this turn of the loop (see publish-batch.ts), drained by `flush`. */
  private readonly batch = new PublishBatch();
  private scheduled: NodeJS.Immediate | undefined;
  private waiters: (() => void)[] = [];
  private readonly feeds: Record<Format, Carried> = { json: { bytes: 0 }, proto: { bytes: 0 } };
  private readonly watchers: PublishWatcher[] = [];
  /** Set at shutdown: an image published after it (a batch still applying) must start no timer. */
  private stopped = false;
  /** As its one owner (relay/feed-monitor.ts) last told it, through `feedChanged`: what a socket opening now is told. */
  private status: FeedStatus = 'OK';
  private ticker: Ticker | undefined;

  constructor(private readonly deps: BroadcasterDeps) {}

  /** Every socket is sent the server's time, on the feed topic, behind whatever was sent before it. */
  start(): void {
    const { clockMs = 0, clock } = this.deps;
    if (clockMs > 0) this.ticker ??= clock.every(clockMs, () => this.tell({ op: 'clock', ts: clock.now() }));
  }

  /** Told of everything published from now on. */
  watch(w: PublishWatcher): void {
    this.watchers.push(w);
  }

  get feed(): FeedStatus {
    return this.status;
  }

  feedTopic(format: Format): Carried {
    return this.feeds[format];
  }

  /** A newer image: to every live variant within this turn of the loop, to conflated ones at the end of their interval. */
  publish(entry: BookEntry): void {
    if (this.batch.add(entry)) this.scheduled = setImmediate(() => this.flush());
  }

  /**
   * Hands queued images to uWS now, before a frame that must come after them: each to the topic
   * of every live variant of its market, encoded once per variant; a conflated variant only marks
   * the market, for the end of its interval.
   */
  flush(): void {
    clearImmediate(this.scheduled);
    this.scheduled = undefined;
    const entries = this.batch.drain();
    for (const entry of entries) {
      const subs = this.deps.index.market(entry.marketId);
      for (const indexed of subs?.variants.values() ?? []) {
        const v = indexed.variant;
        if (v.conflate) this.defer(entry.marketId, v.conflate);
        else this.toTopic(topicOf(v, entry.marketId), v.format, v.delta ? entry.deltaFrame(v.format, v.depth) : entry.frame(v.format, 'none', v.depth), indexed.topic);
      }
      // Every live subscriber now holds this entry: the one before it is needed no more.
      entry.prev = undefined;
      if (subs) this.published(entry.marketId);
    }
    if (entries.length) this.flushed();
    for (const ok of this.waiters.splice(0)) ok();
  }

  /**
   * The image the topic of `mid` for `v` has handed its sockets, when that is the book's newest;
   * none while a newer one waits in this turn's queue or in the variant's conflation interval.
   */
  handed(mid: string, v: Variant): BookEntry | undefined {
    return this.batch.holds(mid) || (v.conflate && this.conflator.holds(mid, v.conflate)) ? undefined : this.deps.book.get(mid);
  }

  /** More images wait to be written than a turn of the loop should carry. */
  busy(): boolean {
    return this.batch.size >= BACKLOG;
  }

  /** Resolves once every image queued so far has been handed to uWS. */
  eased(): Promise<void> {
    return this.batch.size ? new Promise((ok) => this.waiters.push(ok)) : Promise.resolve();
  }

  /**
   * A socket joined a conflated delta topic holding `entry`. The topic's next frame must be one
   * it can apply: a delta from the image the topic's sockets hold only if that is `entry`, so
   * otherwise the next frame is an image, sent at the end of the interval.
   */
  joined(mid: string, indexed: IndexedVariant, entry: BookEntry | undefined): void {
    const v = indexed.variant;
    if (!v.delta || !v.conflate || !entry || indexed.topic.base === entry) return;
    if (indexed.count === 1) {
      indexed.topic.base = entry;
      return;
    }
    indexed.topic.base = undefined;
    this.defer(mid, v.conflate, 0);
  }

  /** A `market`, `result` or `freshness` frame: to every subscriber of the market at once, whatever its variant. */
  publishState(msg: StateMessage): void {
    this.flush();
    this.deps.states.record(msg);
    const subs = this.deps.index.market(msg.mid);
    if (!subs) return;
    const frames: Partial<Record<Format, Frame>> = {};
    for (const indexed of subs.variants.values()) {
      const v = indexed.variant;
      // A conflated socket is told a market is live with the image that makes it so, at the end of its interval.
      if (msg.op === 'freshness' && v.conflate && this.conflator.hold(msg, v.conflate)) continue;
      this.toTopic(topicOf(v, msg.mid), v.format, (frames[v.format] ??= encodeFor(v.format, msg)), indexed.topic);
    }
    this.published(msg.mid);
    this.flushed();
  }

  /** The read model deleted a market: its last `market` and `result` frames are needed no more. */
  forgetState(mid: string): void {
    this.deps.states.forget(mid);
  }

  /** The feed status changed (its owner calls this once per change): every socket is told. */
  feedChanged(status: FeedStatus): void {
    this.status = status;
    this.deps.log.info('feed status', { status });
    this.tell({ op: 'feed', status });
  }

  /** A frame for every socket, on its format's feed topic; the clock's are not counted as frames the feed published. */
  private tell(msg: FeedMessage | ClockMessage): void {
    for (const format of FORMATS) this.toTopic(FEED_TOPIC[format], format, encodeFor(format, msg), this.feeds[format], msg.op !== 'clock');
  }

  private defer(mid: string, conflate: number, updates = 1): void {
    if (this.stopped || !this.conflator.defer(mid, conflate, updates) || this.timers.has(conflate)) return;
    this.timers.set(conflate, this.deps.clock.every(conflate, () => this.conflated(conflate)));
  }

  /** The end of a conflation interval: each market deferred in it, once to every variant of the interval. */
  private conflated(conflate: number): void {
    const due = this.conflator.drain(conflate);
    if (!due) {
      this.timers.get(conflate)?.stop();
      this.timers.delete(conflate);
      return;
    }
    // More than one update in the interval means some were held back: the frame says so.
    for (const [mid, updates] of due) this.publishConflated(mid, conflate, updates > 1);
    this.flushed();
  }

  private publishConflated(mid: string, conflate: number, thinned: boolean): void {
    const entry = this.deps.book.get(mid);
    const subs = this.deps.index.market(mid);
    if (!entry || !subs) return;
    for (const indexed of subs.variants.values()) {
      const v = indexed.variant;
      if (v.conflate !== conflate) continue;
      if (v.delta) {
        this.toTopic(topicOf(v, mid), v.format, entry.deltaFrame(v.format, v.depth, indexed.topic.base), indexed.topic);
        indexed.topic.base = entry;
      } else this.toTopic(topicOf(v, mid), v.format, entry.frame(v.format, thinned ? 'conflated' : 'none', v.depth), indexed.topic);
      this.deps.ledger.conflated(v, mid, entry);
    }
    const live = this.conflator.release(mid, conflate);
    if (live) for (const indexed of subs.variants.values()) if (indexed.variant.conflate === conflate) this.toTopic(topicOf(indexed.variant, mid), indexed.variant.format, encodeFor(indexed.variant.format, live), indexed.topic);
    this.published(mid);
  }

  /**
   * Publishes where someone listens, and counts what the topic carried on it (its sockets were
   * sent it); counts per format, in plain numbers folded into metrics at scrape.
   */
  private toTopic(topic: string, format: Format, frame: Frame, carried: Carried, counted = true): void {
    const n = this.deps.topics.numSubscribers(topic);
    if (n === 0) return;
    this.deps.topics.publish(topic, frame, format === 'proto', this.deps.compress === true);
    carried.bytes += wireBytes(frame);
    if (!counted) return;
    this.deps.metrics.published[format]++;
    this.deps.metrics.delivered[format] += n;
  }

  private published(mid: string): void {
    for (const w of this.watchers) w.publishedTo(mid);
  }

  private flushed(): void {
    for (const w of this.watchers) w.flushed();
  }

  stop(): void {
    this.ticker?.stop();
    this.ticker = undefined;
    this.flush();
    this.stopped = true;
    for (const timer of this.timers.values()) timer.stop();
    this.timers.clear();
    this.conflator.clear();
  }
}
