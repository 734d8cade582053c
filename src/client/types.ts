import type { Clock } from '../lib/clock.js';
import type { MarketFreshness } from './freshness.js';
import type { FeedMessage, MarketStateMessage, NoticeMessage, OddsMessage, ResultMessage, ServerMessage, UnsubscribedMessage, WireTerms } from '../odds/messages.js';
import type { RunnerRemoval, Settlement } from './terms.js';

/** What the client needs of a WebSocket: the browser's, or the `ws` package's in Node. */
export interface SocketLike {
  readonly protocol: string;
  binaryType: string;
  send(data: string | Uint8Array): void;
  close(code?: number, reason?: string): void;
  // Any event argument: the browser's and the `ws` package's event types differ.
  addEventListener(type: 'open' | 'message' | 'close' | 'error', listener: (event: any) => void): void;
}
/**
 * A WebSocket class. The client passes `{ maxPayload }` as a third argument: the `ws` package then
 * refuses a larger frame before reading it; a browser's WebSocket ignores the argument.
 */
export type SocketConstructor = new (url: string, protocols: string[], options?: { maxPayload?: number }) => SocketLike;

export interface ClientOptions {
  /** The odds feed, `ws://HOST:PORT/ws` or `wss://...`. */
  url: string;
  /** `json` (text frames, the default) or `proto` (binary frames). */
  format?: 'json' | 'proto';
  /** The server's heartbeat after this many ms of silence (500 to 30000, default 5000); two of them without a frame mean a dead peer. */
  hb?: number;
  /** An API key, sent as the `key` query parameter (browsers cannot set headers on a WebSocket). */
  key?: string;
  /** The WebSocket class: `globalThis.WebSocket` by default; in Node 20, pass the `ws` package's. */
  WebSocket?: SocketConstructor;
  /** Reconnect delays: doubling from minMs to maxMs, each between half and all of it. */
  backoff?: { minMs?: number; maxMs?: number };
  /**
   * Also take the markets of this client's stored set (`POST /api/v1/subscribe`), which the server
   * sends without a request on the socket. Without it, and without an event or sport subscribe,
   * frames of markets the client did not name are ignored.
   */
  storedSet?: boolean;
  /**
   * The most markets held that the client did not name (taken by event or sport, or from the stored
   * set; default 2000, the server's default per socket): frames of further ones are ignored.
   */
  maxMarkets?: number;
  /**
   * How late what the client reads may arrive before it holds its markets `behind` (ms, 200 to
   * 60000, default 2000: the server's WS_MAX_AGE_MS): judged by the server's `clock` frames,
   * each stamped as it was sent, and by their stopping (docs/protocol.md#the-age-of-a-price).
   */
  maxAgeMs?: number;
  /** Time, for tests that move it themselves: this machine's clock by default. */
  clock?: Clock;
  /**
   * The largest frame the client reads, in bytes (a text frame's length in characters where the
   * socket hands over text): default 4 MiB, far above the largest the server sends. A larger frame
   * is not read: the connection is closed and made again after the usual backoff. The `ws`
   * package refuses it itself from its header (close 1006, error `Max payload size exceeded`);
   * with another socket the client does (close 1009, and an `error` event naming the sizes).
   */
  maxFrameBytes?: number;
}

export interface CloseInfo {
  code: number;
  reason: string;
  /** Whether this connection had opened (false: it could not connect). */
  opened: boolean;
  /** The socket's error message, when it gave one (e.g. "connect ECONNREFUSED ..."). */
  error?: string;
  /** The delay before the next attempt; absent when the client will not reconnect. */
  reconnectInMs?: number;
}

export type ClientEvents = {
  open: [protocol: string];
  close: [info: CloseInfo];
  /** Every frame as received, in order, before anything below: checked, and of a market the client holds or asked for. */
  message: [msg: ServerMessage];
  /** A frame the rule kept: newer than what the book held (`previous`); within an epoch, never older than one emitted before. */
  odds: [frame: OddsMessage, previous: OddsMessage | undefined];
  market: [msg: MarketStateMessage];
  /** A market's terms changed (`terms` undefined: it has none now); after the `market` event of the frame that moved them. */
  terms: [mid: string, terms: WireTerms | undefined, previous: WireTerms | undefined];
  /** A runner was withdrawn: its reduction factor and when, the moment the market's terms say so. */
  removal: [removal: RunnerRemoval];
  result: [msg: ResultMessage];
  /** A market was settled (winners with their dead-heat shares, voids), voided, or its settlement or void rolled back; provisional or confirmed. */
  settlement: [settlement: Settlement];
  feed: [msg: FeedMessage];
  /** A market's freshness changed: told by the server, stale (`disconnected`) when the connection went, live again once resubscribed. */
  freshness: [state: MarketFreshness];
  unsubscribed: [msg: UnsubscribedMessage];
  /** The server telling this socket something it did not ask (a `notice` frame), such as markets left out past its limit. */
  notice: [notice: NoticeMessage];
  /** A frame that could not be decoded, or is not what its op must be (it is dropped; the message says which key is wrong). */
  error: [err: Error];
};

