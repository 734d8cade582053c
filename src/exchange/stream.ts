/**
 * Betfair Exchange Stream API market messages, as the live stream sends them and as Betfair's
 * historic data files store them (one message per line). Only the keys the adapter reads or a
 * reader is likely to look for are typed; the stream may carry more, and new keys at any time:
 * the adapter skips what it does not carry, whatever its form.
 */

/** Betfair writes the starting prices it cannot compute as these strings, not as JSON numbers. */
type SpecialNumber = 'NaN' | 'Infinity' | '-Infinity';

/** A ladder level by price: [price, size]. Size 0 removes the price. */
export type PriceVol = [price: number, size: number];
/** A ladder level by position (0 = best): [position, price, size]. Size 0 removes the position. */
export type LevelPriceVol = [position: number, price: number, size: number];

export type BetfairMarketStatus = 'INACTIVE' | 'OPEN' | 'SUSPENDED' | 'CLOSED';
export type BetfairRunnerStatus = 'ACTIVE' | 'WINNER' | 'LOSER' | 'PLACED' | 'REMOVED_VACANT' | 'REMOVED' | 'HIDDEN';

export interface RunnerDefinition {
  /** Selection ID. */
  id: number;
  status: BetfairRunnerStatus;
  sortPriority: number;
  /** Historic files carry runner names; the live stream does not. */
  name?: string;
  /** Handicap: Asian handicap markets repeat a selection ID once per line. */
  hc?: number;
  adjustmentFactor?: number;
  bsp?: number | SpecialNumber;
  removalDate?: string;
}

/** Every change to it is sent whole, never as a delta. */
export interface MarketDefinition {
  eventTypeId: string;
  eventId: string;
  marketType: string;
  status: BetfairMarketStatus;
  inPlay: boolean;
  /** Seconds bets wait before they are matched in play. */
  betDelay: number;
  marketTime: string;
  openDate: string;
  suspendTime?: string;
  settledTime?: string;
  /** Historic files only. */
  name?: string;
  /** Historic files only. */
  eventName?: string;
  runners: RunnerDefinition[];
  numberOfWinners: number;
  numberOfActiveRunners?: number;
  bettingType: 'ODDS' | 'LINE' | 'RANGE' | 'ASIAN_HANDICAP_DOUBLE_LINE' | 'ASIAN_HANDICAP_SINGLE_LINE' | string;
  complete: boolean;
  version: number;
  countryCode?: string;
  timezone: string;
  venue?: string;
  bspMarket?: boolean;
  turnInPlayEnabled?: boolean;
  persistenceEnabled?: boolean;
  crossMatching?: boolean;
  runnersVoidable?: boolean;
  discountAllowed?: boolean;
  marketBaseRate?: number;
  regulators?: string[];
  eachWayDivisor?: number;
  /** Flat, Hurdle, Chase, Harness...: races only. */
  raceType?: string;
  /** Line markets: the lowest and highest line, and the step between lines. */
  lineMinUnit?: number;
  lineMaxUnit?: number;
  lineInterval?: number;
}

export interface RunnerChange {
  /** Selection ID. */
  id: number;
  hc?: number;
  /** Available to back, full depth. */
  atb?: PriceVol[];
  /** Available to lay, full depth. */
  atl?: PriceVol[];
  /** Best available to back, by position. */
  batb?: LevelPriceVol[];
  batl?: LevelPriceVol[];
  /** Best available to back including virtual bets (what the exchange's site shows), by position. */
  bdatb?: LevelPriceVol[];
  bdatl?: LevelPriceVol[];
  /** Traded volume by price. */
  trd?: PriceVol[];
  /** Last traded price. */
  ltp?: number;
  /** Traded volume of the runner. */
  tv?: number;
  /** Starting price near, far, back and lay book: not carried by the service. */
  spn?: number | SpecialNumber;
  spf?: number | SpecialNumber;
  spb?: PriceVol[];
  spl?: PriceVol[];
}

export interface MarketChange {
  /** Market ID, e.g. "1.170226122". */
  id: string;
  marketDefinition?: MarketDefinition;
  rc?: RunnerChange[];
  /** This change replaces everything held for the market. */
  img?: boolean;
  /** Traded volume of the market. */
  tv?: number;
  /** The stream conflated changes into this one. */
  con?: boolean;
}

export interface MarketChangeMessage {
  op: 'mcm';
  id?: number;
  clk?: string;
  initialClk?: string;
  /** Publish time, ms; absent on a bare status message (`{"op":"mcm","id":2,"status":503}`). */
  pt: number;
  /** SUB_IMAGE, RESUB_DELTA or HEARTBEAT; absent on ordinary deltas. */
  ct?: 'SUB_IMAGE' | 'RESUB_DELTA' | 'HEARTBEAT';
  mc?: MarketChange[];
  segmentType?: 'SEG_START' | 'SEG' | 'SEG_END';
  conflateMs?: number;
  heartbeatMs?: number;
  /** 503 while the exchange's data is late or incomplete; absent or null when well. */
  status?: number | null;
}
