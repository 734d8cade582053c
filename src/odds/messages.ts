/**
 * The odds protocol messages in their JSON shape (DESIGN.md section 5), key for key. The
 * protobuf form in proto/odds.proto carries the same messages; codec.ts converts between them.
 */

export const MARKET_STATUSES = ['OPEN', 'SUSPENDED', 'BALL_RUNNING', 'CLOSED'] as const;
export type MarketStatus = (typeof MARKET_STATUSES)[number];

export const RUNNER_STATUSES = ['ACTIVE', 'SUSPENDED', 'WINNER', 'LOSER', 'REMOVED'] as const;
export type RunnerStatus = (typeof RUNNER_STATUSES)[number];

export const FEED_STATUSES = ['OK', 'STALE'] as const;
export type FeedStatus = (typeof FEED_STATUSES)[number];

/** One ladder level. For session (fancy) markets: price = run line, size = rate. */
export type PriceSize = [price: number, size: number];

export interface RunnerOdds {
  rid: number;
  st: RunnerStatus;
  /** Back (Yes for session markets). */
  b: PriceSize[];
  /** Lay (No for session markets). */
  l: PriceSize[];
}

/** A full image of one market's book, as a publisher sends it and the book keeps it. */
export interface OddsImage {
  mid: string;
  /** Source time, ms. */
  ts: number;
  st: MarketStatus;
  ip: boolean;
  r: RunnerOdds[];
}

export interface OddsMessage extends OddsImage {
  op: 'odds';
  /** Rises with every update of this market. */
  seq: number;
  /** Publish time, ms. */
  pt: number;
  /** True when frames of this market were skipped for this socket before this one. */
  con: boolean;
}

export interface AckMessage {
  op: 'ack';
  id: number;
  /** 1 ok, 0 refused. */
  status: 0 | 1;
  message: string;
}

export interface MarketStateMessage {
  op: 'market';
  mid: string;
  s: boolean;
  go: boolean;
  rt: boolean;
}

export interface ResultMessage {
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

export interface FeedMessage {
  op: 'feed';
  status: FeedStatus;
}

export type ServerMessage =
  | AckMessage
  | OddsMessage
  | MarketStateMessage
  | ResultMessage
  | UnsubscribedMessage
  | HeartbeatMessage
  | FeedMessage;

/** The heartbeat silence a socket may ask for with `?hb=`, in ms. */
export const HEARTBEAT = { min: 500, max: 30000, default: 5000 } as const;

/** A heartbeat written as text, or undefined unless it is a whole number of ms within HEARTBEAT. */
export function parseHeartbeat(text: string): number | undefined {
  const hb = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  return hb >= HEARTBEAT.min && hb <= HEARTBEAT.max ? hb : undefined;
}

export const CLIENT_OPS = ['subscribe', 'unsubscribe', 'ping'] as const;
export type ClientOp = (typeof CLIENT_OPS)[number];

/**
 * A request from a socket. Decoded requests always carry `mids` for subscribe and unsubscribe
 * (empty when the client sent none) and never for ping.
 */
export interface ClientMessage {
  op: ClientOp;
  /** Echoed in the ack; uint32 so the protobuf ack can carry it. */
  id: number;
  mids?: string[];
}

export const INGEST_KINDS = ['sport', 'league', 'event', 'market', 'result', 'odds'] as const;
export type IngestKind = (typeof INGEST_KINDS)[number];

/**
 * One ingest item before validation: the REST vocabulary plus `kind`, with only the keys the
 * publisher sent (a partial event or market changes only those).
 */
export type IngestItemInput = Record<string, unknown> & { kind: IngestKind };
