/**
 * The odds protocol messages in their JSON shape, key for key, as docs/protocol.md
 * documents them. The protobuf form in proto/odds.proto carries the same messages; the codec
 * files convert between them.
 */
import type { ServiceError } from '../errors.js';
import type { WireSettlement, WireTerms } from '../refdata/wire.js';
import type { BettingType, MarketType } from '../refdata/types.js';

export type { WireRunnerSettlement, WireRunnerTerms, WireSettlement, WireTerms } from '../refdata/wire.js';

export const MARKET_STATUSES = ['OPEN', 'SUSPENDED', 'BALL_RUNNING', 'CLOSED'] as const;
export type MarketStatus = (typeof MARKET_STATUSES)[number];

export const RUNNER_STATUSES = ['ACTIVE', 'SUSPENDED', 'WINNER', 'LOSER', 'REMOVED'] as const;
export type RunnerStatus = (typeof RUNNER_STATUSES)[number];

export const FEED_STATUSES = ['OK', 'STALE'] as const;
export type FeedStatus = (typeof FEED_STATUSES)[number];

/**
 * Why a market is stale, in the order a `freshness` frame names them when several apply: the
 * pod lost the bus that numbers prices, the publisher feeding the market is gone or silent, the
 * publisher could not apply a change (or the service refused its image), the source said its data
 * is late.
 */
export const STALE_REASONS = ['bus', 'publisher', 'unreliable', 'late'] as const;
export type StaleReason = (typeof STALE_REASONS)[number];

/**
 * Why a socket is told a market is stale: the market's own reasons, or `behind`, this socket's
 * alone: it was sent less than it could not read in time, so what it holds may be older than the
 * bound (docs/protocol.md#the-age-of-a-price).
 */
export const STALE_WHYS = [...STALE_REASONS, 'behind'] as const;
export type StaleWhy = (typeof STALE_WHYS)[number];

/** The reasons a publisher may give itself, in a `stale` ingest item. */
export const PUBLISHER_STALE_REASONS = ['late', 'unreliable'] as const satisfies readonly StaleReason[];
export type PublisherStaleReason = (typeof PUBLISHER_STALE_REASONS)[number];

/** One ladder level. For session (fancy) markets: price = run line, size = rate. */
export type PriceSize = [price: number, size: number];

export interface RunnerOdds {
  rid: number;
  st: RunnerStatus;
  /** Back (Yes for session markets). */
  b: PriceSize[];
  /** Lay (No for session markets). */
  l: PriceSize[];
  /** Last traded price (the last traded line on a line market); absent means unknown. */
  ltp?: number;
  /** Volume traded on this runner; absent means unknown, not 0. */
  tv?: number;
}

/** What the demo's simulator gives as a suspension's reason; a publisher may give its own words. */
export const SUSPENSION_REASONS = ['goal', 'wicket', 'VAR', 'ball running'] as const;
export type SuspensionReason = (typeof SUSPENSION_REASONS)[number];
/** A suspension's reason: at most this many characters. */
export const MAX_REASON = 50;

/** A full image of one market's book on the wire: an `odds` ingest item's keys, and an `odds` frame's (image.ts: the service's own). */
export interface WireOddsImage {
  mid: string;
  /** Source time, ms. */
  ts: number;
  st: MarketStatus;
  /** Why it is SUSPENDED or BALL_RUNNING, when the source says: `goal`, `wicket`, `VAR`, `ball running`, or a publisher's own words. */
  sr?: string;
  ip: boolean;
  r: RunnerOdds[];
  /** Total matched on the market; absent means unknown, not 0. */
  tv?: number;
}

export interface OddsMessage extends WireOddsImage {
  op: 'odds';
  /**
   * The numbering `seq` belongs to. It changes whenever numbering could start
   * again (a process start in memory mode, a new stream with NATS). A different
   * epoch replaces what a client holds; within one, the higher seq wins.
   */
  epoch: string;
  /** Rises by exactly one with every update of this market, within its epoch. */
  seq: number;
  /** Publish time, ms. */
  pt: number;
  /** True when frames of this market were skipped for this socket (too slow) before this one. */
  con: boolean;
  /** True when updates of this market were held back by the socket's own conflation before this one. */
  cf: boolean;
}

/** One ladder position in a delta: `[i, 0, 0]` clears position i (0 = best). */
export type Level = [i: number, price: number, size: number];

/** What changed on one runner; a key left out is unchanged. */
export interface RunnerDelta {
  rid: number;
  st?: RunnerStatus;
  b?: Level[];
  l?: Level[];
  ltp?: number;
  tv?: number;
}

/**
 * The change from the image with seq `from` to the one with seq `seq`, same epoch. Runners not
 * listed are unchanged; applied to the image `from`, it yields exactly the image `seq`.
 */
export interface DeltaMessage {
  op: 'delta';
  mid: string;
  epoch: string;
  seq: number;
  from: number;
  ts: number;
  pt: number;
  st: MarketStatus;
  /** As the image's: present whenever the image it leads to has one. */
  sr?: string;
  ip: boolean;
  r: RunnerDelta[];
  tv?: number;
}

export interface AckMessage {
  op: 'ack';
  id: number;
  /** 1 ok, 0 refused. */
  status: 0 | 1;
  message: string;
  /** On a resumed subscribe: how many markets were already current and got no image. */
  current?: number;
  /** On an ingest ack: the items refused one by one (odds and stale items); absent when none. */
  refused?: ItemRefusal[];
  /**
   * On an ingest ack with status 0: the refusal's code (errors.ts), so a publisher can tell a
   * batch to send again (`LIMIT`: once the batches before it are acked) from one to mend.
   */
  code?: string;
}

/** One ingest item refused alone: its index in the batch, its market, and why. */
export interface ItemRefusal {
  i: number;
  mid: string;
  message: string;
}

/**
 * What the server tells a socket unasked: something it did not do for the socket (markets of a
 * filter or of the stored set left out, a stored set not loaded yet). Shaped like an HTTP error
 * body, `status` always 0; it answers no request, so it changes no ack.
 */
export interface NoticeMessage {
  op: 'notice';
  status: 0;
  message: string;
}

/** A request refused: the catalogue's message (errors.ts) in a status-0 ack echoing the request's id. */
export const refusal = (id: number, err: ServiceError): AckMessage => ({ op: 'ack', id, status: 0, message: err.message });

/** The catalogue's message (errors.ts) as a notice. */
export const notice = (err: ServiceError): NoticeMessage => ({ op: 'notice', status: 0, message: err.message });

/** A market's state, with the REST keys of its market (docs/rest.md). */
export interface MarketStateMessage {
  op: 'market';
  mid: string;
  /** isActive: true when the market is active, false when it is inactive. */
  s: boolean;
  /** Game over: the market has concluded (its subscribers are then detached). */
  go: boolean;
  /** The market was recalled. */
  rt: boolean;
  /** The terms a bet on it is taken under (bet delay, runners' status and factors...), as its source gave them; absent when it gave none. */
  terms?: WireTerms;
}

/**
 * A market's result with the REST keys of its result, and how it was settled beyond them when
 * the source says: `cert` (provisional or confirmed), `at` (when), `rs` (each runner's status,
 * dead-heat share and void factor). `rt` true: the settlement, or the void, was rolled back.
 */
export interface ResultMessage extends WireSettlement {
  op: 'result';
  mid: string;
  mt: string;
  res: string;
  rt: boolean;
  ia: boolean;
}

export interface UnsubscribedMessage {
  op: 'unsubscribed';
  mids: string[];
}

export interface HeartbeatMessage {
  op: 'hb';
  ts: number;
}

/**
 * The server's time, to every socket every WS_CLOCK_MS behind whatever was sent before it: how
 * late it arrives is how late everything a client reads is (docs/protocol.md#the-age-of-a-price).
 */
export interface ClockMessage {
  op: 'clock';
  ts: number;
}

export interface FeedMessage {
  op: 'feed';
  status: FeedStatus;
}

/** Whether one market's prices are live, and if not why; sent when that changes, and after a subscribe's image while stale. */
export interface FreshnessMessage {
  op: 'freshness';
  mid: string;
  live: boolean;
  /** Only when not live. */
  why?: StaleWhy;
  /** Server time (ms) when this state began. */
  at: number;
}

export type ServerMessage =
  | AckMessage
  | OddsMessage
  | DeltaMessage
  | MarketStateMessage
  | ResultMessage
  | UnsubscribedMessage
  | HeartbeatMessage
  | ClockMessage
  | FeedMessage
  | FreshnessMessage
  | NoticeMessage;

/** Limits on one ingest item: far above any real market, low enough that one item cannot eat the heap. */
export const INGEST_LIMITS = { runners: 500, levels: 10, nested: 100 } as const;

/** The heartbeat silence a socket may ask for with `?hb=`, in ms. */
export const HEARTBEAT = { min: 500, max: 30000, default: 5000 } as const;

/** A heartbeat written as text, or undefined unless it is a whole number of ms within HEARTBEAT. */
export function parseHeartbeat(text: string): number | undefined {
  const hb = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  return hb >= HEARTBEAT.min && hb <= HEARTBEAT.max ? hb : undefined;
}

export const CLIENT_OPS = ['subscribe', 'unsubscribe', 'ping'] as const;
export type ClientOp = (typeof CLIENT_OPS)[number];

/** What a resuming client holds: its epoch and, per market, the newest seq it has. */
export interface Since {
  epoch: string;
  seqs: Record<string, number>;
}

/**
 * A request from a socket. Decoded subscribe and unsubscribe requests always
 * carry `mids`, `eids` and `sis` (empty when the client sent none); ping
 * carries none of them.
 */
export interface ClientMessage {
  op: ClientOp;
  /** Echoed in the ack; uint32 so the protobuf ack can carry it. */
  id: number;
  mids?: string[];
  /** Every market of these events, including markets created later. */
  eids?: number[];
  /** Every market of these sports, including markets created later. */
  sis?: number[];
  /** Ladder levels a side, 1 to 10; absent means all. */
  depth?: number;
  /** At most one frame per market per this many ms (100 to 60000); 0 or absent means every update. */
  conflate?: number;
  since?: Since;
  /** After the first image, send what changed (`delta` frames) rather than whole images. */
  delta?: boolean;
  /** Narrowing `eids` and `sis` to markets of these types (the REST `ty`). */
  tys?: MarketType[];
  /** ... whose terms give one of these countries (ISO 3166, `GB`). */
  ccs?: string[];
  /** ... of these betting types (as terms give it; line types LINE, others ODDS when they do not). */
  bts?: BettingType[];
  /** ... that turn in play (true) or do not (false), as their terms say. */
  tip?: boolean;
}

export const INGEST_KINDS = ['sport', 'league', 'event', 'market', 'result', 'terms', 'odds', 'stale', 'suspend'] as const;
type IngestKind = (typeof INGEST_KINDS)[number];

/**
 * One ingest item before validation: the REST vocabulary plus `kind`, with only the keys the
 * publisher sent (a partial event or market changes only those).
 */
export type IngestItemInput = Record<string, unknown> & { kind: IngestKind };

/** A publisher's word that a market is stale without a new image: the `stale` ingest item. */
export type StaleIngestItem = { kind: 'stale'; mid: string; why: PublisherStaleReason };
