import { encodeFor } from '../odds/codec.js';
import { FORMATS, heldBy, type Book, type BookEntry, type Format, type Frame } from '../odds/book.js';
import type { FeedStatus, ServerMessage, Since } from '../odds/messages.js';
import type { Logger } from '../log.js';
import type { OddsMetrics } from '../metrics/odds.js';
import { PublishBatch, type Pressure } from './publish-batch.js';
import { Conflator } from './conflate.js';
import type { Hub, SessionWatcher } from './hub.js';
import { FEED_TOPIC, topicOf, type Session, type Topics, type Variant } from './session.js';
import type { MarketStates, StateMessage } from './states.js';

/** Images queued for sockets past which a publisher's next batch waits for them to go out. */
const BACKLOG = 1000;

/** What the broadcaster sent since the sweep last asked: those sockets may hold buffered data. */
export interface Sent {
  /** Markets published to. */
  markets: Set<string>;
  /** Sockets sent a frame directly. */
  sockets: Set<Session>;
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
 * Fan-out of the book to sockets. Each market has one uWS topic per variant
 * that someone takes (format, depth, conflation); an update is encoded once
 * per variant and published, so nothing is built per subscriber. Sockets that
 * fall behind are taken off their topics by the sweep (sweep.ts) and catch up
 * when they drain. The only writer of `MarketStates`.
 */
export class Broadcaster implements Pressure, SessionWatcher {
  /** Since the sweep last asked (`takeSent`). */
  private sent: Sent = { markets: new Set(), sockets: new Set() };
  private readonly conflator: Conflator;
  /** Images queued for this turn of the loop (see publish-batch.ts). */
  private readonly batch: PublishBatch;
  /** As its one owner (relay/feed-monitor.ts) last told it, through `feedChanged`: what a socket opening now is told. */
  private feed: FeedStatus = 'OK';

  constructor(private readonly deps: BroadcasterDeps) {
    this.conflator = new Conflator((mid, conflate, thinned) => this.publishConflated(mid, conflate, thinned));
    this.batch = new PublishBatch((entry) => this.publishNow(entry));
  }

  /** A newer image: to every live variant within this turn of the loop, to conflated ones at the end of their interval. */
  publish(entry: BookEntry): void {
    this.batch.add(entry);
  }

  /** Hands queued images to uWS now, before a frame that must come after them. */
  flush(): void {
    this.batch.flush();
  }

  /** More images wait to be written than a turn of the loop should carry. */
  busy(): boolean {
    return this.batch.size >= BACKLOG;
  }

  /** Resolves once every image queued so far has been handed to uWS. */
  eased(): Promise<void> {
    return this.batch.flushed();
  }

  /** What was sent since the last call; the sweep asks on each pass, and looks at those sockets. */
  takeSent(): Sent {
    const sent = this.sent;
    this.sent = { markets: new Set(), sockets: new Set() };
    return sent;
  }

  private publishNow(entry: BookEntry): void {
    const subs = this.deps.hub.market(entry.mid);
    for (const { variant: v } of subs?.variants.values() ?? []) {
      if (v.conflate) this.conflator.mark(entry.mid, v.conflate);
      else this.toTopic(topicOf(v, entry.mid), v.format, v.delta ? entry.deltaFrame(v.format, v.depth) : entry.frame(v.format, 'none', v.depth));
    }
    // Every live subscriber now holds this entry: the one before it is needed no more.
    entry.prev = undefined;
    if (subs) this.sent.markets.add(entry.mid);
  }

  /**
   * A socket joins a conflated delta topic holding `entry`. The topic's next frame must be one
   * it can apply: a delta from the image the topic's sockets hold only if that is `entry`, so
   * otherwise the next frame is an image, sent at the end of the interval.
   */
  joined(mid: string, v: Variant, entry: BookEntry | undefined): void {
    if (!v.delta || !v.conflate || !entry) return;
    const taken = this.deps.hub.market(mid)?.variants.get(v.key);
    if (!taken || taken.sent === entry) return;
    if (taken.count === 1) {
      taken.sent = entry;
      return;
    }
    taken.sent = undefined;
    this.conflator.mark(mid, v.conflate, 0);
  }

  /** A `market`, `result` or `freshness` frame: to every subscriber of the market at once, whatever its variant. */
  publishState(msg: StateMessage): void {
    this.flush();
    this.deps.states.record(msg);
    const subs = this.deps.hub.market(msg.mid);
    if (!subs) return;
    const frames: Partial<Record<Format, Frame>> = {};
    for (const { variant: v } of subs.variants.values()) this.toTopic(topicOf(v, msg.mid), v.format, (frames[v.format] ??= encodeFor(v.format, msg)));
    this.sent.markets.add(msg.mid);
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
    s.conn.subscribe(FEED_TOPIC[s.format]);
    if (this.feed !== 'OK') this.send(s, { op: 'feed', status: this.feed });
  }

  closed(s: Session): void {
    this.sent.sockets.delete(s);
  }

  send(s: Session, msg: ServerMessage): void {
    this.sendFrame(s, encodeFor(s.format, msg));
  }

  sendFrame(s: Session, frame: Frame): void {
    if (s.closed) return;
    s.conn.send(frame, s.binary, this.deps.compress === true);
    s.lastSendAt = Date.now();
    this.sent.sockets.add(s);
    this.deps.metrics.delivered[s.format]++;
  }

  /**
   * Adds markets to a socket, each followed at once by its current image unless
   * `since` shows the client already holds it, then by its `freshness` frame
   * when it is stale (a socket starts with every market assumed live). A socket
   * behind gets the image when it catches up, but the staleness at once: its
   * catch-up sends only what changed after it fell behind.
   */
  attach(s: Session, mids: Iterable<string>, v: Variant, since?: Since): void {
    // uWS throws on any use of a closed socket; a late caller (a retried load) must find nothing to do.
    if (s.closed) return;
    // Queued images reach the topics first, so this socket gets each market's newest once, directly.
    this.flush();
    s.conn.cork(() => {
      for (const mid of mids) {
        const before = s.subs.get(mid);
        if (this.deps.hub.take(s, mid, v)) {
          s.regainedWhileBehind(mid);
          if (!s.lag) {
            if (before) s.conn.unsubscribe(topicOf(before, mid));
            s.conn.subscribe(topicOf(v, mid));
          }
        }
        const entry = this.deps.book.get(mid);
        if (entry && !s.lag) {
          if (!heldBy(since, entry)) this.sendFrame(s, entry.frame(s.format, 'none', v.depth));
          this.joined(mid, v, entry);
        }
        const stale = this.deps.states.stale(mid);
        if (stale) this.send(s, stale);
      }
    });
  }

  /** Removes markets from a socket; returns those it had. */
  detach(s: Session, mids: Iterable<string>): string[] {
    const had: string[] = [];
    if (s.closed) return had;
    for (const mid of mids) {
      const v = s.subs.get(mid);
      if (!v || !this.deps.hub.drop(s, mid)) continue;
      had.push(mid);
      if (!s.lag) s.conn.unsubscribe(topicOf(v, mid));
    }
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
        this.toTopic(topicOf(v, mid), v.format, entry.deltaFrame(v.format, v.depth, taken.sent));
        taken.sent = entry;
      } else this.toTopic(topicOf(v, mid), v.format, entry.frame(v.format, thinned ? 'cf' : 'none', v.depth));
    }
    this.sent.markets.add(mid);
  }

  stop(): void {
    this.batch.stop();
    this.conflator.stop();
  }
}
