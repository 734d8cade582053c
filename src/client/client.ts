import { CLOSE } from '../errors.js';
import { systemClock, type Clock, type Ticker } from '../lib/clock.js';
import { encodeClientProto } from '../odds/client-codec.js';
import { applyDelta } from '../odds/delta.js';
import { HEARTBEAT, type AckMessage, type ClientMessage, type DeltaMessage, type FeedStatus, type MarketStateMessage, type ServerMessage, type WireTerms } from '../odds/messages.js';
import { Backoff } from '../lib/retry.js';
import { readFrame } from './checks.js';
import { MarketBook } from './market-book.js';
import { Resyncs } from './resyncs.js';
import { FreshnessBook, type MarketFreshness } from './freshness.js';
import { Silence } from './silence.js';
import { ServerClock } from './server-clock.js';
import { Emitter } from './emitter.js';
import { Requests, subscribeOf, type Removal, type Subscription } from './subscribes.js';
import { TermsBook, type Settlement } from './terms.js';
import { checkBet, type BetAnswer, type Side } from './bet-check.js';
import { reduce, type Reduced } from './reduction.js';
import type { ClientEvents, ClientOptions, SocketConstructor, SocketLike } from './types.js';

/** Markets the client takes without naming them (by event or sport, or its stored set), unless told otherwise: the server's default per socket. */
export const MAX_MARKETS = 2000;

/** The largest frame the client reads unless told otherwise: far above the largest the server sends (an image of 500 runners is about 200 KB). */
export const MAX_FRAME_BYTES = 4 * 1024 * 1024;
/** RFC 6455's close code for a message too big to process. */
const TOO_BIG = 1009;

/**
 * An odds feed client that runs in browsers and Node: subscribes with
 * promises settled by the acks, keeps a book per market by the epoch and seq
 * rule, drops markets that concluded, and reconnects with jittered backoff,
 * resuming what it asked for with `since` so unchanged markets are not sent
 * again. Silence for two heartbeat intervals is taken as a dead peer.
 *
 * It trusts nothing it is sent: every frame is checked before use (checks.ts) and a bad one is
 * an `error` event; frames of markets it neither holds nor asked for are ignored; within an
 * epoch no frame older than one emitted is emitted again; and asking for markets again after
 * deltas that did not apply is bounded (resyncs.ts).
 */
export class OddsClient extends Emitter<ClientEvents> {
  readonly book = new MarketBook();
  private readonly fresh = new FreshnessBook();
  /** Each market's state, terms and settlement beside the book (terms.ts). */
  private readonly held = new TermsBook();
  private readonly requests = new Requests();
  private readonly backoff: Backoff;
  private readonly url: string;
  private readonly hbMs: number;
  private readonly Socket: SocketConstructor;
  private socket: SocketLike | undefined;
  private live = false;
  private stopped = false;
  private readonly silence: Silence;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private feedStatus: FeedStatus = 'OK';
  private readonly maxMarkets: number;
  private readonly maxFrameBytes: number;
  private readonly resyncs: Resyncs;
  private readonly clock: Clock;
  private ignoredFrames = 0;
  private readonly serverClock = new ServerClock();
  private readonly maxAgeMs: number;
  /** Whether this connection's server sends `clock` frames: only then does the client judge the age of what it reads. */
  private clocked = false;
  /** Until when (this machine's clock) nothing read can have been superseded longer than `maxAgeMs` ago. */
  private fresher = 0;
  private clockTimer: Ticker | undefined;
  private late = 0;

  constructor(private readonly options: ClientOptions) {
    super();
    const Socket = options.WebSocket ?? (globalThis as { WebSocket?: SocketConstructor }).WebSocket;
    if (!Socket) throw new Error('no WebSocket here: pass one as the WebSocket option (in Node, the ws package\'s)');
    this.Socket = Socket;
    this.maxMarkets = options.maxMarkets ?? MAX_MARKETS;
    if (!(Number.isInteger(this.maxMarkets) && this.maxMarkets >= 1)) throw new Error('maxMarkets must be a whole number from 1');
    this.maxAgeMs = options.maxAgeMs ?? 2000;
    if (!(Number.isInteger(this.maxAgeMs) && this.maxAgeMs >= 200 && this.maxAgeMs <= 60_000)) throw new Error('maxAgeMs must be a whole number of ms from 200 to 60000');
    this.maxFrameBytes = options.maxFrameBytes ?? MAX_FRAME_BYTES;
    if (!(Number.isInteger(this.maxFrameBytes) && this.maxFrameBytes >= 1024)) throw new Error('maxFrameBytes must be a whole number of bytes from 1024');
    this.hbMs = options.hb ?? HEARTBEAT.default;
    if (!(this.hbMs >= HEARTBEAT.min && this.hbMs <= HEARTBEAT.max)) throw new Error(`hb must be ${HEARTBEAT.min} to ${HEARTBEAT.max} ms`);
    const url = new URL(options.url);
    url.searchParams.set('hb', String(this.hbMs));
    if (options.key) url.searchParams.set('key', options.key);
    this.url = url.href;
    this.clock = options.clock ?? systemClock;
    this.silence = new Silence(this.hbMs, (ms) => this.dead(ms), this.clock);
    this.resyncs = new Resyncs((mid) => this.resync(mid), this.clock);
    this.backoff = new Backoff(options.backoff?.minMs ?? 250, options.backoff?.maxMs ?? 30_000);
  }

  get connected(): boolean {
    return this.live;
  }

  get feed(): FeedStatus {
    return this.feedStatus;
  }

  /** Frames dropped because they were about markets the client neither holds nor asked for (or holds maxMarkets of already). */
  get ignored(): number {
    return this.ignoredFrames;
  }

  /**
   * How much later than its quickest the server's latest `clock` frame was read (ms): how late
   * everything read with it is. Past `maxAgeMs`, every market is held `behind`.
   */
  get lateness(): number {
    return this.late;
  }

  /** Whether a market's prices are live, or stale with why and since when. */
  freshness(mid: string): MarketFreshness {
    return this.fresh.get(mid);
  }

  /** A market's state and terms as its newest `market` frame gave them. */
  state(mid: string): MarketStateMessage | undefined {
    return this.held.state(mid);
  }

  /** A market's terms (bet delay, runners' status and factors...); undefined until its source gave any. */
  terms(mid: string): WireTerms | undefined {
    return this.held.terms(mid);
  }

  /** A market's settlement, as its newest `result` frame gave it. */
  settlement(mid: string): Settlement | undefined {
    return this.held.settlement(mid);
  }

  /** Can a bet on `rid` at the best `side` price of `mid` be taken now? Everything the answer rests on, in one place. */
  canTake(mid: string, rid: number, side: Side): BetAnswer {
    return checkBet(mid, rid, side, {
      frame: this.book.get(mid), delay: this.book.delay(mid), freshness: this.fresh.get(mid), state: this.held.state(mid), settlement: this.held.settlement(mid),
    });
  }

  /** The price a bet matched at `price` on `rid` at `matchedAt` (ms) is settled at after the market's removals; undefined without terms. */
  reduced(mid: string, rid: number, price: number, matchedAt: number): Reduced | undefined {
    const terms = this.held.terms(mid);
    return terms && reduce(terms, rid, price, matchedAt);
  }

  /** What the client asks for again on every connection. */
  get subscriptions(): readonly Subscription[] {
    return this.requests.subscriptions;
  }

  /** Opens the connection (and keeps one open until close()). */
  connect(): void {
    if (this.stopped || this.socket) return;
    const format = this.options.format ?? 'json';
    const socket = new this.Socket(this.url, [`odds.v1.${format}`], { maxPayload: this.maxFrameBytes });
    socket.binaryType = 'arraybuffer';
    this.socket = socket;
    let opened = false;
    let error: string | undefined;
    // Events of a socket the client has already given up on (a dead peer, close()) are ignored.
    const mine = <E>(fn: (e: E) => void) => (e: E) => {
      if (this.socket === socket) fn(e);
    };
    socket.addEventListener('open', mine(() => {
      opened = this.live = true;
      this.silence.start();
      // Replayed before listeners hear of the open, so a subscribe made in a listener is sent once.
      this.requests.replay((m) => this.send(m), (sub) => this.book.since(sub.eids?.length || sub.sis?.length ? undefined : sub.mids));
      this.emit('open', socket.protocol);
    }));
    socket.addEventListener('message', mine((e: { data: unknown }) => this.receive(e.data)));
    // The first error is the cause (a refused handshake, a refused connect); later ones are its echoes.
    socket.addEventListener('error', mine((e: { message?: string; error?: { message?: string } }) => {
      error ??= e.message ?? e.error?.message;
    }));
    socket.addEventListener('close', mine((e: { code: number; reason: string }) => this.lost(e.code, String(e.reason ?? ''), opened, error)));
  }

  /** Subscribes; resolves with the ack, rejects with RefusedError on status 0. Kept and resumed across reconnects. */
  subscribe(sub: Subscription): Promise<AckMessage> {
    return this.requests.subscribe(sub, this.sender());
  }

  /** Unsubscribes and forgets: these are neither asked for again nor kept in the book (markets named by `mids`). */
  unsubscribe(removal: Removal): Promise<AckMessage> {
    this.requests.forget(removal);
    for (const mid of removal.mids ?? []) this.forget(mid);
    return this.requests.oneOff({ op: 'unsubscribe', mids: removal.mids ?? [], eids: removal.eids ?? [], sis: removal.sis ?? [] }, this.sender());
  }

  /** Resolves once the server has sent everything it sent before the pong: frames on one socket are ordered. */
  ping(): Promise<AckMessage> {
    return this.requests.oneOff({ op: 'ping' }, this.sender());
  }

  /** Stops for good: closes the connection, stops reconnecting, and rejects whatever still waits. */
  close(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.silence.stop();
    this.resyncs.stop();
    clearTimeout(this.reconnectTimer);
    this.clockTimer?.stop();
    const socket = this.socket;
    const opened = this.live;
    this.socket = undefined;
    this.live = false;
    socket?.close(1000, 'client closed');
    this.requests.fail(new Error('the client was closed'));
    this.emit('close', { code: 1000, reason: 'client closed', opened });
  }

  private sender(): ((m: ClientMessage) => void) | undefined {
    return this.live ? (m) => this.send(m) : undefined;
  }

  private send(msg: ClientMessage): void {
    const socket = this.socket!;
    socket.send(socket.protocol === 'odds.v1.proto' ? encodeClientProto(msg) : JSON.stringify(msg));
  }

  private receive(data: unknown): void {
    const at = this.clock.now();
    this.silence.heard();
    const size = typeof data === 'string' ? data.length : (data as ArrayBuffer | undefined)?.byteLength ?? 0;
    if (size > this.maxFrameBytes) return this.tooBig(size);
    const read = readFrame(data);
    if ('error' in read) {
      this.emit('error', new Error(read.error));
      return;
    }
    // The server spoke on this connection: the next failure starts the backoff afresh.
    this.backoff.reset();
    if ('unknown' in read) return;
    const msg = read.msg;
    this.timed(msg, at);
    if ('mid' in msg && !this.wants(msg.mid, msg.op)) {
      this.ignoredFrames++;
      return;
    }
    this.emit('message', msg);
    switch (msg.op) {
      case 'odds': {
        const previous = this.book.get(msg.mid);
        if (this.book.apply(msg, at)) this.emit('odds', msg, previous);
        return;
      }
      case 'delta': this.delta(msg, at); return;
      // A refusal that answers no request of ours (id 0: a message the server could not read) is told as a notice.
      case 'ack': {
        const answered = msg.status === 1 ? this.requests.answers(msg.id) : undefined;
        if (!this.requests.settle(msg) && msg.status === 0) this.emit('notice', { op: 'notice', status: 0, message: msg.message });
        // Live again unless the server says otherwise: it sends a stale market's state before the image.
        if (answered) this.told(this.fresh.resubscribed(answered.eids?.length || answered.sis?.length ? 'all' : answered.mids ?? []));
        return;
      }
      case 'notice': this.emit('notice', msg); return;
      case 'market': this.market(msg); return;
      case 'result': {
        const settled = this.held.result(msg);
        this.emit('result', msg);
        if (settled) this.emit('settlement', settled);
        return;
      }
      case 'unsubscribed':
        this.evict(msg.mids);
        for (const mid of msg.mids) this.held.delete(mid);
        this.emit('unsubscribed', msg);
        return;
      case 'feed':
        this.feedStatus = msg.status;
        this.emit('feed', msg);
        return;
      case 'freshness': this.told([this.fresh.apply(msg)]); return;
      case 'hb': case 'clock': return;
    }
  }

  /**
   * The server's clock from every frame that carries its time (a `clock` or `hb` frame's `ts`, an
   * odds frame's `pt`), and how late what the client reads is. A frame stamped when it was sent
   * (or before) and read `l` ms late proves that nothing the server sent after it has waited
   * longer than `l`, and can wait at most `maxAgeMs − l` more before what the screen holds may be
   * superseded longer than the bound: past that moment, with no newer proof, every market it
   * holds is `behind`. A `clock` frame read later than `maxAgeMs` makes them so at once, and one
   * within half of it live again.
   */
  private timed(msg: ServerMessage, at: number): void {
    const stamp = msg.op === 'clock' || msg.op === 'hb' ? msg.ts : msg.op === 'odds' || msg.op === 'delta' ? msg.pt : undefined;
    if (stamp === undefined) return;
    this.serverClock.observe(stamp, at);
    const late = this.serverClock.lateness(stamp, at);
    if (msg.op === 'clock') {
      this.clocked = true;
      this.late = late;
      if (late > this.maxAgeMs) this.told(this.fresh.late(this.book.mids(), at));
      else if (late <= this.maxAgeMs / 2) this.told(this.fresh.timely(this.book.mids()));
    }
    if (!this.clocked || at + this.maxAgeMs - late <= this.fresher) return;
    this.fresher = at + this.maxAgeMs - late;
    this.clockTimer?.stop();
    this.clockTimer = this.clock.after(this.fresher - at, () => this.told(this.fresh.late(this.book.mids(), this.fresher)));
  }

  /**
   * A market's state and terms: kept, with a `terms` event when they moved and a `removal` for
   * each runner newly removed. A concluded market leaves the book; its terms stay until the
   * server detaches it, so its final result is still taken.
   */
  private market(msg: MarketStateMessage): void {
    if (msg.go) this.evict([msg.mid]);
    const change = this.held.market(msg);
    this.emit('market', msg);
    if (change.terms) this.emit('terms', change.terms.mid, change.terms.terms, change.terms.previous);
    for (const removal of change.removals) this.emit('removal', removal);
  }

  /**
   * Whether a frame of this market is for this client: one it holds or names, or, while it takes
   * markets it cannot name (a filter, its stored set), one more up to maxMarkets held (the
   * freshness of one it does not hold excepted); and a concluded market's frames until the
   * server detaches it.
   */
  private wants(mid: string, op: string): boolean {
    if (this.book.has(mid) || this.requests.names(mid) || this.held.state(mid)) return true;
    // Only a stale market's freshness is kept: of a market it neither holds nor named it would be kept for nothing, without bound.
    if (op === 'freshness') return false;
    return (this.requests.filtered || this.options.storedSet === true) && this.book.size < this.maxMarkets;
  }

  /**
   * A delta applies to the image held only when that is the one with seq `from`; the image it
   * leads to is kept and emitted as an `odds` frame. A delta older than what is held is dropped;
   * any other is dropped and the market asked for again with `since` (within the bounds of
   * resyncs.ts), which brings its newest image (or, when what is held is still current, deltas from it).
   */
  private delta(msg: DeltaMessage, at: number): void {
    const previous = this.book.get(msg.mid);
    const image = previous && applyDelta(previous, msg);
    if (image) {
      if (this.book.apply(image, at)) this.emit('odds', image, previous);
      return;
    }
    if (previous?.epoch === msg.epoch && msg.seq <= previous.seq) return;
    this.resyncs.ask(msg.mid);
  }

  /** Asks for a market again, saying what is held; undefined when it is not asked for (not connected, or no longer wanted). */
  private resync(mid: string): Promise<AckMessage> | undefined {
    const sub = this.requests.covering(mid);
    const send = this.sender();
    if (!sub || !send) return undefined;
    const { depth, conflate, delta } = subscribeOf(sub);
    const since = this.book.since([mid]);
    return this.requests.oneOff({ op: 'subscribe', mids: [mid], depth, conflate, delta, ...(since ? { since } : {}) }, send);
  }

  private drop(mid: string): void {
    this.book.delete(mid);
    this.fresh.delete(mid);
    this.resyncs.forget(mid);
  }

  /** Dropped by the client's own unsubscribe: nothing of it is kept. */
  private forget(mid: string): void {
    this.drop(mid);
    this.held.delete(mid);
  }

  /** Markets the server is done with (concluded, or detached): out of the book and out of what is asked for again. */
  private evict(mids: string[]): void {
    for (const mid of mids) this.drop(mid);
    this.requests.forget({ mids });
  }

  private told(changed: (MarketFreshness | undefined)[]): void {
    for (const state of changed) if (state) this.emit('freshness', state);
  }

  /** Two heartbeats without a frame: reconnects, dropping the old connection without the close handshake a dead peer would never answer (where the socket can). */
  private dead(silentMs: number): void {
    const socket = this.socket as (SocketLike & { terminate?: () => void }) | undefined;
    // Forgotten first, so its own close event is ignored.
    this.lost(1006, `no frame for ${silentMs} ms (two heartbeats of ${this.hbMs} ms): dead peer`, true, undefined);
    if (socket?.terminate) socket.terminate();
    else socket?.close();
  }

  /**
   * A frame past maxFrameBytes (where the socket did not refuse it itself): not read; the
   * connection is given up as `dead` does, saying why, and made again after the backoff.
   */
  private tooBig(size: number): void {
    const socket = this.socket;
    const why = `a frame of ${size} bytes is larger than maxFrameBytes (${this.maxFrameBytes}): not read`;
    this.emit('error', new Error(why));
    this.lost(TOO_BIG, why, true, undefined);
    // Browsers let a script close only with 1000 or 3000 to 4999.
    socket?.close(1000, 'frame too large');
  }

  private lost(code: number, reason: string, opened: boolean, error: string | undefined): void {
    this.silence.stop();
    this.socket = undefined;
    this.live = false;
    this.requests.lost();
    this.resyncs.reset();
    // A concluded market waits for its final frames only on the connection that was sending them.
    this.held.retain((mid) => this.book.has(mid) || this.requests.names(mid) || this.requests.filtered);
    // Nothing reaches the client now: every price it holds is stale until its market is answered again.
    this.told(this.fresh.disconnected(this.book.mids(), this.clock.now()));
    // A new connection is a new link: how late it reads is judged afresh.
    this.clockTimer?.stop();
    this.clocked = false;
    this.fresher = 0;
    this.fresh.timely([]);
    // A revoked key: trying again cannot help.
    if (code === CLOSE.REVOKED.code) {
      this.stopped = true;
      this.requests.fail(new Error(`closed ${code}: ${reason}`));
    }
    const delay = this.stopped ? undefined : code === CLOSE.GOING_AWAY.code ? Math.random() * 1000 : this.backoff.next();
    this.emit('close', { code, reason, opened, error, reconnectInMs: delay });
    if (delay !== undefined) this.reconnectTimer = setTimeout(() => this.connect(), delay);
  }
}
