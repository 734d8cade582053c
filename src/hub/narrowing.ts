import type { BettingType, MarketFacts, MarketType } from '../refdata/types.js';

/**
 * What an event or sport filter narrows its markets to, as an exchange's market filter does:
 * every list given must hold the market's value (within a list, any one will do), and `inPlay`
 * must be its turn-in-play term. A market whose terms do not give a country, or whether it turns
 * in play, matches no filter on it.
 */
export interface Narrowing {
  readonly types?: ReadonlySet<MarketType>;
  readonly countries?: ReadonlySet<string>;
  readonly bettingTypes?: ReadonlySet<BettingType>;
  readonly turnInPlay?: boolean;
}

/** Whether a market passes a narrowing; no narrowing passes every market. */
export function passes(n: Narrowing | undefined, m: MarketFacts): boolean {
  if (!n) return true;
  if (n.types && !n.types.has(m.type)) return false;
  if (n.countries && (m.country === undefined || !n.countries.has(m.country))) return false;
  if (n.bettingTypes && !n.bettingTypes.has(m.bettingType)) return false;
  return n.turnInPlay === undefined || m.turnInPlay === n.turnInPlay;
}

/** A narrowing in the ack's words: `ty match-odd,goals; cc GB; bt ODDS; tip true`. */
export function describeNarrowing(n: Narrowing): string {
  const parts: string[] = [];
  if (n.types) parts.push(`ty ${[...n.types].join(',')}`);
  if (n.countries) parts.push(`cc ${[...n.countries].join(',')}`);
  if (n.bettingTypes) parts.push(`bt ${[...n.bettingTypes].join(',')}`);
  if (n.turnInPlay !== undefined) parts.push(`tip ${n.turnInPlay}`);
  return parts.join('; ');
}
