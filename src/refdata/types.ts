/**
 * The wire shapes of the interface (spec section 2), key for key. The read
 * model holds exactly these objects, so what Postgres loads is what REST
 * serialises and what ingest accepts back.
 */
export const MARKET_TYPES = [
  'match-odd', 'completed-match', 'tied-match', 'goals', 'super-over', 'bookmaker', 'session',
  'other-market', 'odd-even', 'khadometer', 'winner-market', 'line-market', 'bookmaker2',
  'ball-by-ball', 'player-race',
] as const;

export type MarketType = (typeof MARKET_TYPES)[number];

export interface Sport {
  si: number;
  na: string;
  a: boolean;
}

export interface League {
  li: number;
  si: number;
  na: string;
}

export interface Event {
  eid: number;
  na: string;
  le: string;
  /** ISO 8601, UTC, milliseconds. */
  st: string;
  go: boolean;
  ip: boolean;
  si: number;
  li: number;
  tv: string | null;
}

export interface Runner {
  rid: number;
  na: string;
}

export interface NestedMarket {
  mid: string;
  s: boolean;
  go: boolean;
  r: Runner[];
  if: unknown;
}

export interface Market {
  mid: string;
  eid: number;
  na: string;
  si: number;
  s: boolean;
  go: boolean;
  ty: MarketType;
  rt: boolean;
  if?: unknown;
  di?: number;
  bl?: number;
  r?: Runner[];
  m?: NestedMarket[];
}

export interface MarketResult {
  mid: string;
  mt: MarketType;
  res: string;
  rt: boolean;
  ia: boolean;
}
