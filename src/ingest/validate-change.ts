import { LINE_TYPES, isLineType, type MarketType } from '../refdata/types.js';
import type { EventItem, LeagueItem, MarketItem, TermsChange } from './items.js';

/**
 * What an item may change of a market, an event or a league that already exists, judged against the market as it
 * stands (the write's transaction reads it, with the rows locked). A refusal names the field by
 * its wire key and says what to do instead; undefined when the change is one the market can take.
 */

/** A top-level market as it stands. */
export interface StoredMarket {
  type: MarketType;
  eventId: number;
}

/**
 * A market keeps its type and its event for life, as an exchange's does: a new type would leave
 * what belongs to the old one behind (a race's nested markets, a match's runners and their
 * settlement), and a new event would carry its runners, terms and result into another match,
 * another sport. A different market gets its own ID.
 */
export function marketChangeRefusal(stored: StoredMarket, item: MarketItem): string | undefined {
  if (item.type !== undefined && item.type !== stored.type) {
    return `ty ${item.type} would change the type of market ${item.id} (${stored.type}): a market's type never changes; a market of another type needs its own mid`;
  }
  if (item.eventId !== undefined && item.eventId !== stored.eventId) {
    return `eid ${item.eventId} would move market ${item.id} from event ${stored.eventId}: a market stays in the event it was created in; a market of another event needs its own mid`;
  }
  return undefined;
}

/**
 * A league and an event keep their sport, for the same reason a market keeps its event: a move
 * would carry every event of the league, every market of the event, into another sport, as an
 * exchange's competition and event never change their sport.
 */
export function sportChangeRefusal(stored: number, item: LeagueItem | EventItem): string | undefined {
  if (item.sportId === undefined || item.sportId === stored) return undefined;
  const [a, what, key, holds] = item.kind === 'league' ? ['a', 'league', 'li', 'events'] : ['an', 'event', 'eid', 'markets'];
  return `si ${item.sportId} would move ${what} ${item.id} from sport ${stored}: ${a} ${what} stays in the sport it was created in (its ${holds} with it); ${a} ${what} of another sport needs its own ${key}`;
}

/** An event's league is one of its own sport: a league of another would list it under that sport. */
export function eventLeagueRefusal(event: { sportId: number; leagueId: number; leagueSportId: number }): string | undefined {
  if (event.leagueSportId === event.sportId) return undefined;
  return `li ${event.leagueId} is a league of sport ${event.leagueSportId}, not of the event's sport ${event.sportId}: an event's league is one of its sport`;
}

/** The terms only a line market has, by their wire keys. */
const LINE_TERMS = [['lineMin', 'lmin'], ['lineMax', 'lmax'], ['lineInterval', 'lint']] as const;

/** Betting types whose prices are lines, not odds: a client reads such a market's book by them (docs/protocol.md). */
const LINE_BETTING = new Set(['LINE', 'RANGE']);

/**
 * A line's range and step mean something only on a line market (the types priced as a line);
 * on a runner market they would be published as terms no bet is taken under. So does a line
 * betting type: on a runner market it would tell a client to read decimal odds as lines.
 * Clearing them (null) is always allowed.
 */
export function termsChangeRefusal(type: MarketType, marketId: string, terms: TermsChange): string | undefined {
  if (isLineType(type)) return undefined;
  const given: string[] = LINE_TERMS.filter(([name]) => terms[name] != null).map(([, key]) => key);
  if (terms.bettingType != null && LINE_BETTING.has(terms.bettingType)) given.unshift(`bt ${terms.bettingType}`);
  if (!given.length) return undefined;
  return `${given.join(', ')} ${given.length > 1 ? 'are' : 'is'} only for line markets (${LINE_TYPES.join(', ')}); market ${marketId} is ${type}`;
}
