/**
 * Reference data as the service reasons about it: readable names, whatever
 * keys the wire gives them. The REST shapes, key for key, and the
 * translation into them are in wire.ts; Postgres rows become these in
 * queries.ts, and publishers' items in ingest's validation.
 */
export const MARKET_TYPES = [
  'match-odd', 'completed-match', 'tied-match', 'goals', 'super-over', 'bookmaker', 'session',
  'other-market', 'odd-even', 'khadometer', 'winner-market', 'line-market', 'bookmaker2',
  'ball-by-ball', 'player-race',
] as const;

export type MarketType = (typeof MARKET_TYPES)[number];

/**
 * The fancy markets priced as one line rather than by runners: a runner's back side is Yes and its
 * lay side No, with price = run line and size = rate. Every other type (and a player-race's nested
 * market) is a runner market, priced in decimal odds.
 */
const LINE_TYPES = ['session', 'ball-by-ball', 'odd-even', 'khadometer', 'line-market', 'other-market'] as const satisfies readonly MarketType[];
export type LineType = (typeof LINE_TYPES)[number];
export const isLineType = (ty: MarketType | null): ty is LineType => (LINE_TYPES as readonly unknown[]).includes(ty);

export interface Sport {
  id: number;
  name: string;
  /** A flag carried on every sport; its meaning is the platform's (active, in the demo). */
  active: boolean;
}

export interface Event {
  id: number;
  /** Event name or title. */
  name: string;
  /** Its league's (or tournament's) name. */
  leagueName: string;
  /** Scheduled start: ISO 8601, UTC, milliseconds. */
  startTime: string;
  /** Game over: the event has concluded. */
  concluded: boolean;
  /** The event is live. */
  inPlay: boolean;
  sportId: number;
  leagueId: number;
  /** Live TV: an HTML iframe snippet, or null when there is none. */
  liveTv: string | null;
}

export interface Runner {
  /** Runner or player ID. */
  id: number;
  name: string;
}

/** A market nested inside a player-race market. */
export interface NestedMarket {
  id: string;
  isActive: boolean;
  concluded: boolean;
  runners: Runner[];
  /** Info comments: null or any value. */
  info: unknown;
}

export interface Market {
  id: string;
  eventId: number;
  name: string;
  /** Its event's sport. */
  sportId: number;
  isActive: boolean;
  /** Game over: the market has concluded. */
  concluded: boolean;
  type: MarketType;
  recalled: boolean;
  /** Info comments; present only on markets that carry one (null or a value). */
  info?: unknown;
  /** The order of the market list; present only where set (sessions and some others). */
  displayOrder?: number;
  /** Ball number; present only on ball-by-ball markets. */
  ball?: number;
  /** Present on markets published with runners (never on player-race). */
  runners?: Runner[];
  /** Present only on player-race. */
  nested?: NestedMarket[];
}

export interface MarketResult {
  marketId: string;
  /** The market's type (the parent's, for a nested market). */
  marketType: MarketType;
  /** A runner or run number as text, back/lay, a word such as an abandonment label, or empty. */
  outcome: string;
  recalled: boolean;
  abandoned: boolean;
}
