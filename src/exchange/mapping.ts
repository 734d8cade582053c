import type { MarketStatus, RunnerStatus } from '../odds/messages.js';
import { MARKET_TYPES, type MarketType, type SettledStatus, type TermsRunnerStatus } from '../refdata/types.js';
import type { BetfairMarketStatus, BetfairRunnerStatus, MarketDefinition, RunnerDefinition } from './stream.js';

/**
 * How Betfair's vocabulary becomes the service's. docs/exchange.md shows the same rules as a
 * table; a change here changes that table.
 */

/** Event types named without a catalogue. */
const SPORT_NAMES: Readonly<Record<number, string>> = {
  1: 'Soccer', 2: 'Tennis', 4: 'Cricket', 7: 'Horse Racing', 4339: 'Greyhound Racing',
};

export const sportName = (si: number): string => SPORT_NAMES[si] ?? `Sport ${si}`;

/**
 * Without a catalogue's competition, each sport's events go into one league of their own, kept
 * apart from Betfair's competition IDs (which stay far below a billion).
 */
const DEFAULT_LEAGUE_BASE = 1_000_000_000;
export const defaultLeague = (si: number): { li: number; na: string } => ({ li: DEFAULT_LEAGUE_BASE + si, na: `${sportName(si)} (Betfair)` });

/**
 * A market type named in the service's own word (`session`, `other-market`): never one of
 * Betfair's (theirs are upper case), only what `npm run export` writes for a type Betfair has no
 * name for, so the market comes back as the type it was.
 */
export const ownType = (def: Pick<MarketDefinition, 'marketType'>): MarketType | undefined =>
  (MARKET_TYPES as readonly string[]).includes(def.marketType) ? def.marketType as MarketType : undefined;

export function marketType(def: Pick<MarketDefinition, 'marketType' | 'bettingType'>): MarketType {
  const own = ownType(def);
  if (own) return own;
  const t = def.marketType;
  if (t === 'MATCH_ODDS') return 'match-odd';
  if (t === 'COMPLETED_MATCH') return 'completed-match';
  if (t === 'TIED_MATCH') return 'tied-match';
  if (t.startsWith('OVER_UNDER_')) return 'goals';
  if (t === 'WIN') return 'winner-market';
  if (t === 'ODD_OR_EVEN') return 'odd-even';
  if (def.bettingType === 'LINE') return 'line-market';
  return 'other-market';
}

/**
 * The runners the market's row lists, in the order given. Betfair's definition lists every
 * runner the market has; an export of one of the service's own types leaves unnamed the runner
 * that only carries a line market's prices (the row lists none), so the row lists the named ones.
 */
export const listedRunners = (def: Pick<MarketDefinition, 'marketType'>, runners: readonly RunnerDefinition[]): RunnerDefinition[] =>
  ownType(def) ? runners.filter((r) => r.name) : [...runners];

/** INACTIVE (not yet open for betting) reads as SUSPENDED: the market exists and takes no bets. */
export const marketStatus = (s: BetfairMarketStatus): MarketStatus => (s === 'INACTIVE' ? 'SUSPENDED' : s);

const RUNNER_STATUS: Record<BetfairRunnerStatus, RunnerStatus> = {
  ACTIVE: 'ACTIVE', WINNER: 'WINNER', LOSER: 'LOSER', REMOVED: 'REMOVED',
  // Placed in an each-way market: it won the place part.
  PLACED: 'WINNER',
  REMOVED_VACANT: 'REMOVED',
  // Hidden runners take no bets but may come back.
  HIDDEN: 'SUSPENDED',
};
export const runnerStatus = (s: BetfairRunnerStatus): RunnerStatus => RUNNER_STATUS[s];

/** A runner's status in the market's terms: the exchange's own, a vacant removal read as a removal. */
export const termsRunnerStatus = (s: BetfairRunnerStatus): TermsRunnerStatus => (s === 'REMOVED_VACANT' ? 'REMOVED' : s);

/** How a runner of a closed market was settled; undefined for one the exchange left unsettled (ACTIVE, HIDDEN). */
export function settledStatus(s: BetfairRunnerStatus): SettledStatus | undefined {
  if (s === 'REMOVED_VACANT') return 'REMOVED';
  return s === 'WINNER' || s === 'LOSER' || s === 'PLACED' || s === 'REMOVED' ? s : undefined;
}

/** "OVER_UNDER_25" reads "Over Under 25": the name of a market whose definition and catalogue give none. */
export const typeName = (marketType: string): string =>
  marketType.toLowerCase().split('_').filter(Boolean).map((w) => w[0].toUpperCase() + w.slice(1)).join(' ') || 'Market';

/** The settled winners' selection IDs, comma-joined, in the definition's order; empty when none settled. */
export function winners(def: MarketDefinition): string {
  return def.runners.filter((r) => r.status === 'WINNER' || r.status === 'PLACED').map((r) => r.id).join(',');
}
