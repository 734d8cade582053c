import { encodeFor } from '../odds/codec.js';
import { FORMATS, heldBy, type Book, type BookEntry, type Format, type Frame } from '../odds/book.js';
import type { FeedStatus, ServerMessage, Since } from '../odds/messages.js';
import type { Logger } from '../log.js';
import type { OddsMetrics } from '../metrics/odds.js';
import { PublishBatch, type Pressure } from './publish-batch.js';
import { Conflator } from './conflate.js';
import type { Hub, SessionWatcher, Taken } from './hub.js';
import { FEED_TOPIC, topicOf, type Session, type Topics, type Variant } from './session.js';
import type { MarketStates, StateMessage } from './states.js';

/** Images queued for sockets past which a publisher's next batch waits for them to go out. */
const BACKLOG = 1000;

/**
 * Told what the broadcaster sent, as it sends it: those sockets may now hold buffered data, and
 * the sweep looks at them on its next pass.
 */
export interface SendWatcher {
  /** A frame went to this socket directly. */
  sentTo(s: Session): void;
  /** Frames went to every socket that takes this market. */
  publishedTo(mid: string): void;
}

export interface BroadcasterDeps {
  topics: Topics;
  hub: Hub;
  book: Book;
  states: MarketStates;
  metrics: OddsMetrics;
  log: Logger;
  /** Frames are deflated for sockets that negotiated permessage-deflate (WS_COMPRESSION). */
  compress?: boolean;
}

/**
 * Fan-out of the book to sockets: it only encodes and publishes. Each market
 * has one uWS topic per variant that someone takes (format, depth, conflation
 * preset); an update is encoded once per variant and published, so nothing is
 * built per subscriber. It drains two queues of its own: the publish batch,
 * once per turn of the loop, and the conflator, once per interval. Which
 * topics a socket is on is the session's to keep (session.ts); when a socket
 * falls behind and catches up is the sweep's to decide (sweep.ts), told here
 * what was sent. The only writer of `MarketStates`.
 */
export class Broadcaster implements Pressure, SessionWatcher {
  private readonly conflator = new Conflator();
  /** One timer per conflation interval in use. */
  private readonly timers = new Map<number, NodeJS.Timeout>();
  /** Images queued for this turn of the loop (see publish-batch.ts), drained by `flush`. */
  private readonly batch = new PublishBatch();
  private scheduled: NodeJS.Immediate | undefined;
  private waiters: (() => void)[] = [];
  /**
   * Per conflated delta variant of a market, the image its topic's sockets hold: the next delta
   * starts from it (none: the next frame is an image). Keyed by the hub's entry for the variant,
   * so it goes when the last socket leaves the variant.
   */
  private readonly bases = new WeakMap<Taken, BookEntry>();
  private readonly watchers: SendWatcher[] = [];
  /** Set at shutdown: an image published after it (a batch still applying) must start no timer. */
  private stopped = false;
  /** As its one owner (relay/feed-monitor.ts) last told it, through `feedChanged`: what a socket opening now is told. */
  private feed: FeedStatus = 'OK';

  constructor(private readonly deps: BroadcasterDeps) {}

  /** Told of every frame sent from now on. */
  watchSends(w: SendWatcher): void {
    this.watchers.push(w);
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
    for (const entry of this.batch.take()) {
      const subs = this.deps.hub.market(entry.mid);
      for (const { variant: v } of subs?.variants.values() ?? []) {
        if (v.conflate) this.mark(entry.mid, v.conflate);
        else this.toTopic(topicOf(v, entry.mid), v.format, v.delta ? entry.deltaFrame(v.format, v.depth) : entry.frame(v.format, 'none', v.depth));
      }
      // Every live subscriber now holds this entry: the one before it is needed no more.
      entry.prev = undefined;
      if (subs) this.published(entry.mid);
    }
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

  private mark(mid: string, conflate: number, updates = 1): void {
    if (this.stopped || !this.conflator.mark(mid, conflate, updates) || this.timers.has(conflate)) return;
    // Unref'd: a conflation timer never keeps a stopping process alive.
    this.timers.set(conflate, setInterval(() => this.conflated(conflate), conflate).unref());
  }

  /** The end of a conflation interval: each market marked in it, once to every variant of the interval. */
  private conflated(conflate: number): void {
    const due = this.conflator.take(conflate);
    if (!due) {
      clearInterval(this.timers.get(conflate));
      this.timers.delete(conflate);
      return;
    }
    // More than one update in the interval means some were held back: the frame says so.
    for (const [mid, updates] of due) this.publishConflated(mid, conflate, updates > 1);
  }

  /**
   * A socket joins a conflated delta topic holding `entry`. The topic's next frame must be one
   * it can apply: a delta from the image the topic's sockets hold only if that is `entry`, so
   * otherwise the next frame is an image, sent at the end of the interval.
   */
  joined(mid: string, v: Variant, entry: BookEntry | undefined): void {
    if (!v.delta || !v.conflate || !entry) return;
    const taken = this.deps.hub.market(mid)?.variants.get(v.key);
    if (!taken || this.bases.get(taken) === entry) return;
    if (taken.count === 1) {
      this.bases.set(taken, entry);
      return;
    }
    this.bases.delete(taken);
    this.mark(mid, v.conflate, 0);
  }

  /** A `market`, `result` or `freshness` frame: to every subscriber of the market at once, whatever its variant. */
  publishState(msg: StateMessage): void {
    this.flush();
    this.deps.states.record(msg);
    const subs = this.deps.hub.market(msg.mid);
    if (!subs) return;
    const frames: Partial<Record<Format, Frame>> = {};
    for (const { variant: v } of subs.variants.values()) this.toTopic(topicOf(v, msg.mid), v.format, (frames[v.format] ??= encodeFor(v.format, msg)));
    this.published(msg.mid);
  }

  /** The read model deleted a market: its last `market` and `result` frames are needed no more. */
  forgetState(mid: string): void {
    this.deps.states.forget(mid);
  }

  /** The feed status changed (its owner calls this once per change): every socket is told. */
  feedChanged(status: FeedStatus): void {
    this.feed = status;
    this.deps.log.info('feed status', { status });
    const msg = { op: 'feed', status } as const;
    for (const format of FORMATS) this.toTopic(FEED_TOPIC[format], format, encodeFor(format, msg));
  }

  /** A socket the hub opened: on the feed topic, told the feed status unless it is OK. */
  opened(s: Session): void {
    s.joinFeed();
    if (this.feed !== 'OK') this.send(s, { op: 'feed', status: this.feed });
  }

  send(s: Session, msg: ServerMessage): void {
    this.sendFrame(s, encodeFor(s.format, msg));
  }

  sendFrame(s: Session, frame: Frame): void {
    if (s.closed) return;
    s.send(frame, this.deps.compress === true);
    for (const w of this.watchers) w.sentTo(s);
    this.deps.metrics.delivered[s.format]++;
  }

  /**
   * Adds markets to a socket, each followed at once by its current image unless
   * `since` shows the client already holds it, then by its `freshness` frame
   * when it is stale (a socket starts with every market assumed live), then by
   * its `market` frame when that carries terms, so every subscriber holds them. A socket
   * behind gets the image when it catches up, but the staleness at once: its
   * catch-up sends only what changed after it fell behind.
   */
  attach(s: Session, mids: Iterable<string>, v: Variant, since?: Since): void {
    // uWS throws on any use of a closed socket; a late caller (a retried load) must find nothing to do.
    if (s.closed) return;
    // Queued images reach the topics first, so this socket gets each market's newest once, directly.
    this.flush();
    s.cork(() => {
      for (const mid of mids) {
        this.deps.hub.take(s, mid, v);
        const entry = this.deps.book.get(mid);
        if (entry && !s.lag) {
          if (!heldBy(since, entry)) this.sendFrame(s, entry.frame(s.format, 'none', v.depth));
          this.joined(mid, v, entry);
        }
        const stale = this.deps.states.stale(mid);
        if (stale) this.send(s, stale);
        const terms = this.deps.states.terms(mid);
        if (terms) this.send(s, terms);
      }
    });
  }

  /** Removes markets from a socket; returns those it had. */
  detach(s: Session, mids: Iterable<string>): string[] {
    const had: string[] = [];
    if (s.closed) return had;
    for (const mid of mids) if (this.deps.hub.drop(s, mid)) had.push(mid);
    return had;
  }

  /** Detaches on the server's initiative and says so; a socket behind is told once it has caught up. */
  detachAndTell(s: Session, mids: Iterable<string>): void {
    const had = this.detach(s, mids);
    if (!had.length) return;
    if (s.lag) for (const mid of had) s.lostWhileBehind(mid);
    else this.send(s, { op: 'unsubscribed', mids: had });
  }

  /** Markets that concluded: every socket that takes them loses them, and is told. */
  detachEverywhere(mids: readonly string[]): void {
    const bySession = new Map<Session, string[]>();
    for (const mid of mids) {
      for (const s of this.deps.hub.market(mid)?.sessions ?? []) {
        const list = bySession.get(s);
        if (list) list.push(mid);
        else bySession.set(s, [mid]);
      }
    }
    for (const [s, list] of bySession) this.detachAndTell(s, list);
  }

  /** Publishes where someone listens; counts per format, in plain numbers folded into metrics at scrape. */
  private toTopic(topic: string, format: Format, frame: Frame): void {
    const n = this.deps.topics.numSubscribers(topic);
    if (n === 0) return;
    this.deps.topics.publish(topic, frame, format === 'proto', this.deps.compress === true);
    this.deps.metrics.published[format]++;
    this.deps.metrics.delivered[format] += n;
  }

  private publishConflated(mid: string, conflate: number, thinned: boolean): void {
    const entry = this.deps.book.get(mid);
    const subs = this.deps.hub.market(mid);
    if (!entry || !subs) return;
    for (const taken of subs.variants.values()) {
      const v = taken.variant;
      if (v.conflate !== conflate) continue;
      if (v.delta) {
        this.toTopic(topicOf(v, mid), v.format, entry.deltaFrame(v.format, v.depth, this.bases.get(taken)));
        this.bases.set(taken, entry);
      } else this.toTopic(topicOf(v, mid), v.format, entry.frame(v.format, thinned ? 'cf' : 'none', v.depth));
    }
    this.published(mid);
  }

  private published(mid: string): void {
    for (const w of this.watchers) w.publishedTo(mid);
  }

  stop(): void {
    this.flush();
    this.stopped = true;
    for (const timer of this.timers.values()) clearInterval(timer);
    this.timers.clear();
    this.conflator.clear();
  }
}
