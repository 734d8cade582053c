/**
 * The wire shapes of the REST contract, key for key (docs/rest.md lists
 * them). The read model holds exactly these objects, so what
 * Postgres loads is what REST serialises and what ingest accepts back.
 */
export const MARKET_TYPES = [
  'match-odd', 'completed-match', 'tied-match', 'goals', 'super-over', 'bookmaker', 'session',
  'other-market', 'odd-even', 'khadometer', 'winner-market', 'line-market', 'bookmaker2',
  'ball-by-ball', 'player-race',
] as const;

export type MarketType = (typeof MARKET_TYPES)[number];

/**
 * The fancy markets priced as one line rather than by runners: a runner's `b` is Yes and `l` is
 * No, with price = run line and size = rate. Every other type (and a player-race's nested market)
 * is a runner market, priced in decimal odds.
 */
const LINE_TYPES = ['session', 'ball-by-ball', 'odd-even', 'khadometer', 'line-market', 'other-market'] as const satisfies readonly MarketType[];
export type LineType = (typeof LINE_TYPES)[number];
export const isLineType = (ty: MarketType | null): ty is LineType => (LINE_TYPES as readonly unknown[]).includes(ty);

export interface Sport {
  /** Sport ID. */
  si: number;
  /** Name. */
  na: string;
  /** A flag carried on every sport; its meaning is the platform's (active, in the demo). */
  a: boolean;
}

export interface League {
  /** League ID. */
  li: number;
  /** Its sport. */
  si: number;
  na: string;
}

export interface Event {
  /** Event ID. */
  eid: number;
  /** Event name or title. */
  na: string;
  /** League or tournament name (the league's `na`). */
  le: string;
  /** Scheduled start: ISO 8601, UTC, milliseconds. */
  st: string;
  /** Game over: the event has concluded. */
  go: boolean;
  /** In play: the event is live. */
  ip: boolean;
  /** Its sport. */
  si: number;
  /** Its league. */
  li: number;
  /** Live TV: an HTML iframe snippet, or null when there is none. */
  tv: string | null;
}

export interface Runner {
  /** Runner or player ID. */
  rid: number;
  na: string;
}

/** A market nested inside a player-race market's `m`. */
export interface NestedMarket {
  mid: string;
  /** Active status: true when the nested market is active, false when it is inactive. */
  s: boolean;
  /** Game over. */
  go: boolean;
  r: Runner[];
  /** Info comments: null or any value. */
  if: unknown;
}

export interface Market {
  /** Market ID. */
  mid: string;
  eid: number;
  na: string;
  si: number;
  /** isActive: true when the market is active, false when it is inactive. */
  s: boolean;
  /** Game over: the market has concluded. */
  go: boolean;
  /** Market type. */
  ty: MarketType;
  /** Recalled. */
  rt: boolean;
  /** Info comments; present only on markets that carry one (null or a value). */
  if?: unknown;
  /** Display ID, the order of the market list; present only where set (sessions and some others). */
  di?: number;
  /** Ball number; present only on ball-by-ball markets. */
  bl?: number;
  /** Runners; present on markets published with them (never on player-race). */
  r?: Runner[];
  /** Nested markets; present only on player-race. */
  m?: NestedMarket[];
}

export interface MarketResult {
  mid: string;
  /** Market type (the parent's, for a nested market). */
  mt: MarketType;
  /** Result: a runner or run number as text, back/lay, a word such as an abandonment label, or empty. */
  res: string;
  /** The result was recalled. */
  rt: boolean;
  /** The market was abandoned. */
  ia: boolean;
}
