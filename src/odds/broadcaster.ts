import type { TemplatedApp, WebSocket } from 'uWebSockets.js';
import { encodeJson, encodeProto } from './codec.js';
import type { Book, BookEntry, Format, Frame } from './book.js';
import type { FeedStatus, ServerMessage } from './messages.js';
import type { Logger } from '../log.js';
import type { OddsMetrics } from '../metrics/odds.js';

export interface SocketState {
  readonly id: number;
  readonly keyId: string;
  readonly client: string;
  readonly format: Format;
  readonly hbMs: number;
  readonly mids: Set<string>;
  /** Over the soft backpressure limit: off every odds topic until it drains. */
  lagging: boolean;
  laggingSince: number;
  /** Each market's seq when the socket went lagging: what it had already been sent. */
  sentSeqs: Map<string, number> | undefined;
  /** Last frame sent to this socket directly (pub/sub frames are accounted per market). */
  lastSendAt: number;
  tokens: number;
  tokensAt: number;
  closed: boolean;
}

export type Socket = WebSocket<SocketState>;

export interface BroadcastLimits {
  /** Buffered bytes above which a socket is taken off its topics. */
  slowBytes: number;
  /** Buffered bytes above which a socket is closed at once. */
  maxBytes: number;
  /** How long a socket may stay lagging before it is closed with CLOSE_SLOW. */
  slowCloseMs: number;
  /** Published frames are deflated for sockets that negotiated permessage-deflate. */
  compress: boolean;
}

/** Close codes sent by the server (documented in the README). */
export const CLOSE_GOING_AWAY = 1001;
export const CLOSE_SLOW = 4008;

const TOPIC_PREFIX: Record<Format, string> = { json: 'j/', proto: 'p/' };
/** '$' cannot occur in a market ID, so control topics never collide with markets. */
const FEED_TOPIC: Record<Format, string> = { json: 'j/$feed', proto: 'p/$feed' };
const topic = (format: Format, mid: string): string => TOPIC_PREFIX[format] + mid;
const FORMATS = ['json', 'proto'] as const;

export function encodeFor(format: Format, msg: ServerMessage): Frame {
  return format === 'json' ? encodeJson(msg) : encodeProto(msg);
}

/**
 * Fan-out of the book to sockets. Each market has one uWS topic per format;
 * an update is encoded once per format that has subscribers and published,
 * so nothing is built per subscriber. A socket that cannot keep up is taken
 * off its topics (its frames are skipped, nobody else waits) and, once it
 * drains, gets the newest image of each of its markets marked `con:true`.
 */
export class Broadcaster {
  private open = new Set<Socket>();
  private byClient = new Map<string, Set<Socket>>();
  private feedStatus: FeedStatus = 'OK';
  private readonly byFormat: Record<Format, number> = { json: 0, proto: 0 };
  private subscriptionCount = 0;

  constructor(
    private readonly app: TemplatedApp,
    private readonly book: Book,
    private readonly limits: BroadcastLimits,
    private readonly metrics: OddsMetrics,
    private readonly log: Logger,
  ) {
    metrics.watch({ sockets: (f) => this.byFormat[f], subscriptions: () => this.subscriptionCount, feedStale: () => this.feedStatus === 'STALE' });
  }

  get size(): number {
    return this.open.size;
  }

  sockets(format: Format): number {
    return this.byFormat[format];
  }

  subscriptions(): number {
    return this.subscriptionCount;
  }

  get feed(): FeedStatus {
    return this.feedStatus;
  }

  publish(entry: BookEntry): void {
    for (const format of FORMATS) this.toTopic(topic(format, entry.mid), format, () => entry.frame(format));
  }

  /** Sends a state or result frame to every subscriber of a market. */
  publishToMarket(mid: string, msg: ServerMessage): void {
    for (const format of FORMATS) this.toTopic(topic(format, mid), format, () => encodeFor(format, msg));
  }

  /** Encodes only for a format that has subscribers on this topic. */
  private toTopic(t: string, format: Format, frame: () => Frame): void {
    const n = this.app.numSubscribers(t);
    if (n === 0) return;
    this.app.publish(t, frame(), format === 'proto', this.limits.compress);
    this.metrics.framesPublished.inc({ format });
    this.metrics.framesDelivered.inc({ format }, n);
  }

  setFeed(status: FeedStatus): void {
    if (status === this.feedStatus) return;
    this.feedStatus = status;
    this.log.info('feed status', { status });
    for (const format of FORMATS) this.toTopic(FEED_TOPIC[format], format, () => encodeFor(format, { op: 'feed', status }));
  }

  opened(ws: Socket): void {
    const s = ws.getUserData();
    this.open.add(ws);
    this.byFormat[s.format]++;
    let set = this.byClient.get(s.client);
    if (!set) this.byClient.set(s.client, (set = new Set()));
    set.add(ws);
    ws.subscribe(FEED_TOPIC[s.format]);
    if (this.feedStatus !== 'OK') this.send(ws, { op: 'feed', status: this.feedStatus });
  }

  closed(ws: Socket): void {
    const s = ws.getUserData();
    s.closed = true;
    this.open.delete(ws);
    this.byFormat[s.format]--;
    this.subscriptionCount -= s.mids.size;
    this.byClient.get(s.client)?.delete(ws);
    if (this.byClient.get(s.client)?.size === 0) this.byClient.delete(s.client);
  }

  send(ws: Socket, msg: ServerMessage): void {
    const s = ws.getUserData();
    this.sendFrame(ws, encodeFor(s.format, msg));
  }

  /** Adds markets to a socket; each market's current image follows at once, before any newer frame. */
  attach(ws: Socket, mids: readonly string[]): void {
    const s = ws.getUserData();
    ws.cork(() => {
      for (const mid of mids) {
        if (!s.mids.has(mid)) {
          s.mids.add(mid);
          this.subscriptionCount++;
          if (!s.lagging) ws.subscribe(topic(s.format, mid));
        }
        const entry = this.book.get(mid);
        if (entry && !s.lagging) this.sendFrame(ws, entry.frame(s.format));
      }
    });
  }

  /** Removes markets from a socket; returns those it had. */
  detach(ws: Socket, mids: readonly string[]): string[] {
    const s = ws.getUserData();
    const had: string[] = [];
    for (const mid of mids) {
      if (!s.mids.delete(mid)) continue;
      this.subscriptionCount--;
      had.push(mid);
      if (!s.lagging) ws.unsubscribe(topic(s.format, mid));
    }
    return had;
  }

  /** REST subscribe: every live socket of the client gains the markets. */
  attachClient(client: string, mids: readonly string[]): void {
    for (const ws of this.byClient.get(client) ?? []) this.attach(ws, mids);
  }

  /** REST unsubscribe or a closed market: detach and tell each socket which markets it lost. */
  detachClient(client: string, mids: readonly string[]): void {
    for (const ws of this.byClient.get(client) ?? []) this.detachAndTell(ws, mids);
  }

  detachEverywhere(mids: readonly string[]): void {
    for (const ws of this.open) this.detachAndTell(ws, mids);
  }

  /** One pass over the sockets: slow-consumer state and heartbeats. Called on a short timer. */
  sweep(now = Date.now()): void {
    for (const ws of this.open) {
      const s = ws.getUserData();
      const buffered = ws.getBufferedAmount();
      if (buffered > this.limits.maxBytes || (s.lagging && now - s.laggingSince > this.limits.slowCloseMs)) {
        this.log.warn('closing slow consumer', { socket: s.id, client: s.client, buffered, laggingMs: s.lagging ? now - s.laggingSince : 0 });
        this.metrics.slowCloses.inc();
        ws.end(CLOSE_SLOW, 'slow consumer');
        continue;
      }
      if (!s.lagging) {
        if (buffered > this.limits.slowBytes) this.pause(ws, now);
      } else if (buffered <= this.limits.slowBytes / 4) {
        this.resume(ws);
      }
      if (now - s.lastSendAt >= s.hbMs && !this.heardRecently(s, now)) this.send(ws, { op: 'hb', ts: now });
    }
  }

  /** Drain callback of uWS: a lagging socket that emptied its buffer resumes at once. */
  drained(ws: Socket): void {
    const s = ws.getUserData();
    if (s.lagging && ws.getBufferedAmount() <= this.limits.slowBytes / 4) this.resume(ws);
  }

  closeAll(code: number, reason: string): void {
    for (const ws of [...this.open]) ws.end(code, reason);
  }

  private detachAndTell(ws: Socket, mids: readonly string[]): void {
    const had = this.detach(ws, mids);
    if (had.length) this.send(ws, { op: 'unsubscribed', mids: had });
  }

  private sendFrame(ws: Socket, frame: Frame): void {
    const s = ws.getUserData();
    ws.send(frame, typeof frame !== 'string');
    s.lastSendAt = Date.now();
    this.metrics.framesDelivered.inc({ format: s.format });
  }

  private pause(ws: Socket, now: number): void {
    const s = ws.getUserData();
    s.lagging = true;
    s.laggingSince = now;
    // uWS never drops frames itself (its limit is off), so everything up to here was queued.
    s.sentSeqs = new Map();
    for (const mid of s.mids) {
      ws.unsubscribe(topic(s.format, mid));
      const seq = this.book.get(mid)?.seq;
      if (seq !== undefined) s.sentSeqs.set(mid, seq);
    }
  }

  /** Back on its topics, with the newest image of each market that moved while it lagged. */
  private resume(ws: Socket): void {
    const s = ws.getUserData();
    const sent = s.sentSeqs ?? new Map<string, number>();
    s.lagging = false;
    s.sentSeqs = undefined;
    this.metrics.resyncs.inc();
    ws.cork(() => {
      for (const mid of s.mids) {
        ws.subscribe(topic(s.format, mid));
        const entry = this.book.get(mid);
        const had = sent.get(mid);
        if (!entry || entry.seq === had) continue;
        if (had !== undefined) this.metrics.framesSkipped.inc(entry.seq - had);
        this.sendFrame(ws, entry.frame(s.format, true));
      }
    });
  }

  /** Whether any of the socket's markets published within its heartbeat interval; remembers the hit. */
  private heardRecently(s: SocketState, now: number): boolean {
    for (const mid of s.mids) {
      const at = this.book.get(mid)?.pt;
      if (at !== undefined && now - at < s.hbMs) {
        s.lastSendAt = at;
        return true;
      }
    }
    return false;
  }
}
