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
export const LINE_TYPES = ['session', 'ball-by-ball', 'odd-even', 'khadometer', 'line-market', 'other-market'] as const satisfies readonly MarketType[];
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
  /** The terms a bet on it is taken and settled under, as its source gave them; absent when none were given. */
  terms?: MarketTerms;
}

/**
 * How an exchange prices a market: in decimal odds, or as a line (a number of runs, goals or
 * points), Betfair's betting types.
 */
export const BETTING_TYPES = ['ODDS', 'LINE', 'RANGE', 'ASIAN_HANDICAP_DOUBLE_LINE', 'ASIAN_HANDICAP_SINGLE_LINE'] as const;
export type BettingType = (typeof BETTING_TYPES)[number];

/** The betting type of a market whose source gave none: a line for the line types, decimal odds otherwise. */
export const bettingTypeOf = (m: Pick<Market, 'type' | 'terms'>): BettingType => m.terms?.bettingType ?? (isLineType(m.type) ? 'LINE' : 'ODDS');

/** What a subscribe's filters look at of a market: its type, and of its terms the betting type, country and turn in play. */
export interface MarketFacts {
  readonly type: MarketType;
  readonly bettingType: BettingType;
  readonly country?: string;
  readonly turnInPlay?: boolean;
}

/**
 * A runner's standing as its market's terms give it: taking bets (ACTIVE), withdrawn before the
 * off (REMOVED: its bets are void and the others' matched prices reduced by its factor), settled
 * (WINNER, LOSER, PLACED: it won the place part of an each-way or place market), or HIDDEN
 * (taking no bets for now).
 */
export const TERMS_RUNNER_STATUSES = ['ACTIVE', 'REMOVED', 'WINNER', 'LOSER', 'PLACED', 'HIDDEN'] as const;
export type TermsRunnerStatus = (typeof TERMS_RUNNER_STATUSES)[number];

export interface RunnerTerms {
  runnerId: number;
  status: TermsRunnerStatus;
  /**
   * Its reduction factor, a percentage: were it removed, matched prices on the others would be
   * reduced by it; once it is removed, the factor that was applied.
   */
  adjustmentFactor?: number;
  /** When it was removed, ms since the epoch. */
  removedAt?: number;
  /** Its handicap (Asian handicap and line markets). */
  handicap?: number;
}

/** A market's terms: each absent unless its source gave it. */
export interface MarketTerms {
  /** Seconds a bet waits before it is matched (in play). */
  betDelay?: number;
  /** The market turns in play at the off rather than closing. */
  turnInPlay?: boolean;
  /** When it is due to suspend, ms since the epoch. */
  suspendAt?: number;
  bettingType?: BettingType;
  /** How many runners win (the places paid on a place market). */
  winners?: number;
  /** Each way: the win odds are divided by this for the place part. */
  eachWayDivisor?: number;
  /** Bets may be settled at the starting price (Betfair's BSP). */
  startingPrice?: boolean;
  /** ISO 3166 code of the event's country. */
  country?: string;
  venue?: string;
  /** Flat, Hurdle, Chase, Harness...: races only. */
  raceType?: string;
  /** The commission charged on net winnings, a percentage. */
  commission?: number;
  /** The regulators the market is offered under. */
  regulators?: string[];
  /** Line markets: the lowest and highest line, and the step between lines. */
  lineMin?: number;
  lineMax?: number;
  lineInterval?: number;
  /** Runners whose terms were given, in the market's runner order. */
  runners?: RunnerTerms[];
}

export interface MarketResult {
  marketId: string;
  /** The market's type (the parent's, for a nested market). */
  marketType: MarketType;
  /** A runner or run number as text, back/lay, a word such as an abandonment label, or empty. */
  outcome: string;
  /** Recalled: the settlement (or the void, when abandoned) was rolled back. */
  recalled: boolean;
  abandoned: boolean;
  /** How the source settled it beyond the outcome; absent when it said no more. */
  settlement?: Settlement;
}

/** Provisional: as scouted live, may still change; confirmed: the official result. */
export const CERTAINTIES = ['provisional', 'confirmed'] as const;
export type Certainty = (typeof CERTAINTIES)[number];

/** How one runner was settled. */
export const SETTLED_STATUSES = ['WINNER', 'LOSER', 'PLACED', 'REMOVED'] as const;
export type SettledStatus = (typeof SETTLED_STATUSES)[number];

export interface RunnerSettlement {
  runnerId: number;
  status: SettledStatus;
  /** A winner's share in a dead heat (0.5: two tied for one place); absent means 1. */
  deadHeat?: number;
  /** The share of each stake returned void (1: all of it, as for a removed runner); absent means 0. */
  voidFactor?: number;
}

export interface Settlement {
  certainty?: Certainty;
  /** When it was settled, ms since the epoch. */
  settledAt?: number;
  runners?: RunnerSettlement[];
}
