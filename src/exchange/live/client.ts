/**
 * The exchange stream as one long-lived market subscription: connect over
 * TLS, read the `connection` message, authenticate, subscribe, and hand on
 * every whole market change (`change`). When the connection is lost, goes
 * quiet, or sends something unreadable, it reconnects with backoff and
 * subscribes again carrying the last `initialClk` and `clk` it handed on, so
 * the exchange resumes from there (a RESUB_DELTA) instead of starting over.
 * A refusal that another try cannot mend (a bad app key or session) stops it
 * with the exchange's own code and words.
 *
 * `pause()` stops reading the socket while the reader cannot keep up (the
 * exchange then conflates for this client); the silence watchdog does not count
 * that time. `current` says whether the exchange is heard as it should be (a
 * Source for the publisher's heartbeats). `resubscribe()` asks for a fresh image of every market on the same
 * connection: a new subscription replaces the old and starts with a SUB_IMAGE.
 */
import { EventEmitter } from 'node:events';
import { systemClock, type Clock, type Ticker } from '../../lib/clock.js';
import { Backoff } from '../../lib/retry.js';
import { LIMITS as MESSAGE_LIMITS } from '../check.js';
import type { MarketChangeMessage } from '../stream.js';
import { StreamConnection } from './connection.js';
import { FATAL_CODES, StreamError } from './errors.js';
import {
  authentication, DEFAULT_DATA_FILTER, heartbeat, HEARTBEAT_MS,
  type MarketDataFilter, type MarketFilter, type ExchangeMessage, type StatusMessage, type SubscriptionRequest,
} from './protocol.js';
import { SegmentJoiner } from './segments.js';

export const DEFAULT_HOST = 'stream-api.betfair.com';
export const DEFAULT_PORT = 443;
const LIMITS = {
  /** Longest line read before the connection is dropped as broken: 8 MiB. */
  maxLineBytes: 8 * 1024 * 1024,
  /** Most market changes one segmented change may join: as many as the translator takes in one message. */
  maxSegmentMarkets: MESSAGE_LIMITS.marketChanges,
  /** Most bytes a segmented change's lines may hold together: far above a SUB_IMAGE of a thousand full-depth markets. */
  maxSegmentBytes: 64 * 1024 * 1024,
  /** Silence allowed while connecting, authenticating and subscribing. */
  handshakeMs: 15_000,
} as const;
/** Quiet for this many heartbeat intervals means the connection is dead. */
const SILENT_BEATS = 3;
/** Quiet for this many, a heartbeat request asks whether it still lives, and the data is no longer taken as current. */
const ASK_BEATS = 2;
/** A segmented change still not whole after this many heartbeat intervals of reading (and at least the handshake's allowance) never will be. */
const SEGMENT_BEATS = 6;
const AUTH_ID = 1;
const SUBSCRIPTION_ID = 2;

export interface ExchangeStreamOptions {
  host?: string;
  port?: number;
  appKey: string;
  session: string;
  marketFilter: MarketFilter;
  dataFilter?: MarketDataFilter;
  heartbeatMs?: number;
  conflateMs?: number;
  /** Extra trusted CA (PEM), for a private stream server; certificates are always verified. */
  ca?: string | Buffer;
  maxLineBytes?: number;
  maxSegmentMarkets?: number;
  maxSegmentBytes?: number;
  handshakeMs?: number;
  backoff?: { minMs: number; maxMs: number };
  /** What its watchdog, retries and silences are timed by: the system's, unless a test moves its own. */
  clock?: Clock;
}

interface ExchangeStreamEvents {
  /** The server greeted a new connection. */
  connected: [connectionId: string];
  /** The subscription is live; `resumed` when it carried a clk from an earlier connection. */
  subscribed: [info: { resumed: boolean; connectionsAvailable?: number }];
  /** A whole market change (segments joined), in the order the exchange sent them. */
  change: [msg: MarketChangeMessage];
  /** The exchange's health flag changed: 503 when its data is late or incomplete, null when well again. */
  health: [status: number | null];
  /** The connection ended for `reason`; the next attempt starts in `delayMs`. */
  reconnecting: [reason: StreamError, delayMs: number];
  /** Stopped for good: by `stop()` (no reason) or a refusal that retrying cannot mend. */
  stopped: [reason?: StreamError];
}

/** `waiting`: between connections, for the backoff. */
type Phase = 'idle' | 'connecting' | 'authenticating' | 'subscribing' | 'live' | 'waiting' | 'stopped';

export class ExchangeStream extends EventEmitter<ExchangeStreamEvents> {
  private readonly opts: Required<Omit<ExchangeStreamOptions, 'ca' | 'conflateMs' | 'clock'>> & Pick<ExchangeStreamOptions, 'ca' | 'conflateMs'>;
  private readonly clock: Clock;
  private readonly backoff: Backoff;
  private readonly segments: SegmentJoiner;
  private connection: StreamConnection | undefined;
  private phase: Phase = 'idle';
  private initialClk: string | undefined;
  private clk: string | undefined;
  private health: number | null = null;
  private heartbeatMs: number;
  private lastHeard = 0;
  private asked = false;
  private nextId = SUBSCRIPTION_ID + 1;
  private watchdog: Ticker | undefined;
  private retryTimer: Ticker | undefined;
  /** When reading was paused, while it is. */
  private pausedAt: number | undefined;
  /** Time spent paused, ms: the reading clock stands still meanwhile. */
  private pausedMs = 0;

  constructor(options: ExchangeStreamOptions) {
    super();
    this.opts = {
      host: DEFAULT_HOST, port: DEFAULT_PORT, dataFilter: DEFAULT_DATA_FILTER, heartbeatMs: HEARTBEAT_MS.default,
      maxLineBytes: LIMITS.maxLineBytes, maxSegmentMarkets: LIMITS.maxSegmentMarkets, maxSegmentBytes: LIMITS.maxSegmentBytes, handshakeMs: LIMITS.handshakeMs,
      backoff: { minMs: 500, maxMs: 30_000 },
      ...options,
    };
    this.clock = options.clock ?? systemClock;
    this.heartbeatMs = this.opts.heartbeatMs;
    this.backoff = new Backoff(this.opts.backoff.minMs, this.opts.backoff.maxMs);
    this.segments = new SegmentJoiner(this.opts.maxSegmentMarkets, this.opts.maxSegmentBytes, { now: () => this.readingClock() });
  }

  /** Milliseconds of reading: the clock less the time spent paused. */
  private readingClock(): number {
    const now = this.clock.now();
    return now - this.pausedMs - (this.pausedAt === undefined ? 0 : now - this.pausedAt);
  }

  get paused(): boolean {
    return this.pausedAt !== undefined;
  }

  /**
   * Whether what was handed on is the exchange's current data: subscribed, and heard from within
   * two heartbeat intervals (past that a heartbeat is asked for, at three the connection is given
   * up). Paused, the silence is the reader's own, not the exchange's.
   */
  get current(): boolean {
    return this.phase === 'live' && (this.pausedAt !== undefined || this.clock.now() - this.lastHeard <= this.heartbeatMs * ASK_BEATS);
  }

  /** Stops reading the exchange's socket until resume(). */
  pause(): void {
    if (this.pausedAt !== undefined) return;
    this.pausedAt = this.clock.now();
    this.connection?.pause();
  }

  resume(): void {
    if (this.pausedAt === undefined) return;
    this.pausedMs += this.clock.now() - this.pausedAt;
    this.pausedAt = undefined;
    // Silence while paused was ours, not the server's.
    this.lastHeard = this.clock.now();
    this.connection?.resume();
  }

  /** Asks for a fresh image of every market (a SUB_IMAGE) on the live connection; false when there is none. */
  resubscribe(): boolean {
    if (this.phase !== 'live' || !this.connection) return false;
    this.connection.send({ ...this.subscription(), id: this.nextId++, initialClk: undefined, clk: undefined });
    return true;
  }

  start(): void {
    if (this.phase === 'idle') this.open();
  }

  stop(): void {
    if (this.phase === 'stopped') return;
    this.finish(undefined);
  }

  private open(): void {
    this.phase = 'connecting';
    this.asked = false;
    this.lastHeard = this.clock.now();
    this.connection = new StreamConnection(
      { host: this.opts.host, port: this.opts.port, ca: this.opts.ca, maxLineBytes: this.opts.maxLineBytes },
      { message: (msg, bytes) => this.onMessage(msg, bytes), closed: (reason) => this.onClosed(reason) },
    );
    if (this.pausedAt !== undefined) this.connection.pause();
    const tick = Math.max(50, Math.min(this.heartbeatMs, this.opts.handshakeMs) / 4);
    this.watchdog = this.clock.every(tick, () => this.checkSilence());
  }

  private onMessage(msg: ExchangeMessage, bytes: number): void {
    this.lastHeard = this.clock.now();
    this.asked = false;
    switch (msg.op) {
      case 'connection':
        if (this.phase !== 'connecting') return;
        this.phase = 'authenticating';
        this.connection!.send(authentication(AUTH_ID, this.opts.appKey, this.opts.session));
        this.emit('connected', msg.connectionId ?? '');
        return;
      case 'status':
        return this.onStatus(msg);
      case 'mcm':
        return this.onChange(msg, bytes);
    }
  }

  private onStatus(msg: StatusMessage): void {
    if (msg.statusCode === 'FAILURE') {
      const code = msg.errorCode ?? 'UNKNOWN';
      const what = msg.id === AUTH_ID ? 'the authentication' : msg.id === SUBSCRIPTION_ID ? 'the market subscription' : `request ${msg.id ?? '(no id)'}`;
      const err = new StreamError(code, `the exchange refused ${what}: ${code}${msg.errorMessage ? `: ${msg.errorMessage}` : ''}`, FATAL_CODES.has(code));
      // A clock the exchange no longer accepts: start over with a fresh image rather than fail again.
      if (code === 'INVALID_CLOCK') this.initialClk = this.clk = undefined;
      return err.fatal ? this.finish(err) : this.connection!.close(err);
    }
    if (msg.id === AUTH_ID && this.phase === 'authenticating') {
      this.phase = 'subscribing';
      this.connection!.send(this.subscription());
    } else if (msg.id === SUBSCRIPTION_ID && this.phase === 'subscribing') {
      this.goLive(msg.connectionsAvailable);
    }
  }

  private onChange(msg: MarketChangeMessage, bytes: number): void {
    // The image can come before the subscription's status; either means the subscription holds.
    if (this.phase === 'subscribing') this.goLive(undefined);
    const whole = this.segments.add(msg, bytes);
    if (!whole) return;
    if (whole.initialClk) this.initialClk = whole.initialClk;
    if (whole.clk) this.clk = whole.clk;
    if (typeof whole.heartbeatMs === 'number' && whole.heartbeatMs >= HEARTBEAT_MS.min) this.heartbeatMs = whole.heartbeatMs;
    const health = whole.status ?? null;
    if (health !== this.health) {
      this.health = health;
      this.emit('health', health);
    }
    this.emit('change', whole);
  }

  private goLive(connectionsAvailable: number | undefined): void {
    this.phase = 'live';
    this.backoff.reset();
    this.emit('subscribed', { resumed: this.clk !== undefined, connectionsAvailable });
  }

  private subscription(): SubscriptionRequest {
    const req: SubscriptionRequest = {
      op: 'marketSubscription', id: SUBSCRIPTION_ID, marketFilter: this.opts.marketFilter, marketDataFilter: this.opts.dataFilter,
      segmentationEnabled: true, heartbeatMs: this.opts.heartbeatMs,
    };
    if (this.opts.conflateMs !== undefined) req.conflateMs = this.opts.conflateMs;
    if (this.initialClk) req.initialClk = this.initialClk;
    if (this.clk) req.clk = this.clk;
    return req;
  }

  private checkSilence(): void {
    if (this.pausedAt !== undefined) return;
    const started = this.segments.started;
    const segmentMs = Math.max(this.heartbeatMs * SEGMENT_BEATS, this.opts.handshakeMs);
    if (started !== undefined && this.readingClock() - started > segmentMs) {
      return this.connection?.close(new StreamError('SEGMENTS_STALLED', `a segmented change was still not whole after ${segmentMs} ms of reading`));
    }
    const quiet = this.clock.now() - this.lastHeard;
    if (this.phase !== 'live') {
      if (quiet > this.opts.handshakeMs) this.connection?.close(new StreamError('SILENT', `no ${this.awaiting()} for ${this.opts.handshakeMs} ms`));
      return;
    }
    if (quiet > this.heartbeatMs * SILENT_BEATS) {
      this.connection?.close(new StreamError('SILENT', `the stream sent nothing for ${quiet} ms (heartbeat ${this.heartbeatMs} ms)`));
    } else if (quiet > this.heartbeatMs * ASK_BEATS && !this.asked) {
      this.asked = true;
      this.connection?.send(heartbeat(this.nextId++));
    }
  }

  private awaiting(): string {
    return this.phase === 'connecting' ? 'connection message' : this.phase === 'authenticating' ? 'answer to the authentication' : 'answer to the subscription';
  }

  private onClosed(reason: StreamError): void {
    this.watchdog?.stop();
    this.connection = undefined;
    this.segments.reset();
    if (this.phase === 'stopped') return;
    if (reason.fatal) return this.finish(reason);
    this.phase = 'waiting';
    const delay = this.backoff.next();
    // Armed before telling: a listener may stop() the client, which disarms it.
    this.retryTimer = this.clock.after(delay, () => this.open());
    this.emit('reconnecting', reason, delay);
  }

  private finish(reason: StreamError | undefined): void {
    this.phase = 'stopped';
    this.watchdog?.stop();
    this.retryTimer?.stop();
    this.connection?.close(reason ?? new StreamError('SOCKET', 'stopped'));
    this.emit('stopped', reason);
  }
}
