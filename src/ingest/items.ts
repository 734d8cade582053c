import type { MarketTerms, MarketType, Runner, RunnerTerms, Settlement } from '../refdata/types.js';

/**
 * A publisher's reference item once validated: what it changes, by domain
 * name (validate.ts reads the wire keys, apply.ts writes the columns). Every
 * field but the ID is optional: a partial item changes only what it carries,
 * and creating a row needs the columns listed in REQUIRED.
 */
interface SportItem { kind: 'sport'; id: number; name?: string; active?: boolean }
export interface LeagueItem { kind: 'league'; id: number; sportId?: number; name?: string }
export interface EventItem {
  kind: 'event'; id: number; name?: string; leagueName?: string; startTime?: string; concluded?: boolean; inPlay?: boolean;
  sportId?: number; leagueId?: number; liveTv?: string | null;
}
export interface NestedItem { id: string; isActive: boolean; concluded: boolean; runners: Runner[]; info?: unknown }
export interface MarketItem {
  kind: 'market'; id: string; eventId?: number; name?: string; sportId?: number; isActive?: boolean; concluded?: boolean;
  type?: MarketType; recalled?: boolean; info?: unknown;
  /** null clears it. */
  displayOrder?: number | null;
  /** null clears it. */
  ball?: number | null;
  runners?: Runner[]; nested?: NestedItem[];
}
/** How a result was settled beyond its outcome: each key given changes it, null clears it. */
export type SettlementChange = { [K in keyof Settlement]?: Settlement[K] | null };

export interface ResultItem {
  kind: 'result'; marketId: string; outcome?: string; recalled?: boolean; abandoned?: boolean; marketType?: MarketType;
  settlement?: SettlementChange;
}

/** A market's terms as an item changes them: each key given sets it, null clears it, one left out stays. */
export type TermsChange = { [K in keyof Omit<MarketTerms, 'runners'>]?: MarketTerms[K] | null };
/** One runner's terms as an item changes them, the same way; `status` is ACTIVE until given. */
export type RunnerTermsChange = { runnerId: number; status?: RunnerTerms['status'] } & { [K in 'adjustmentFactor' | 'removedAt' | 'handicap']?: number | null };

export interface TermsItem { kind: 'terms'; marketId: string; terms: TermsChange; runners?: RunnerTermsChange[] }

export type ReferenceItem = SportItem | LeagueItem | EventItem | MarketItem | ResultItem | TermsItem;

/** The columns, named as the wire names them, that creating a row needs: a refusal lists those missing. */
export const REQUIRED: Record<ReferenceItem['kind'], readonly string[]> = {
  sport: ['na'],
  league: ['si', 'na'],
  event: ['na', 'st', 'si', 'li'],
  market: ['eid', 'na', 'ty'],
  result: [],
  terms: [],
};

/** The ID an item names its row by: a market's for a result. */
export const itemId = (item: ReferenceItem): string | number => (item.kind === 'result' || item.kind === 'terms' ? item.marketId : item.id);

/** Of a kind or ID as sent, what an error repeats: a valid one whole, a 100,000-character one not. */
const NAMED = 64;
const cut = (v: string | number): string => {
  const s = String(v);
  return s.length > NAMED ? `${s.slice(0, NAMED)}… (${s.length} characters)` : s;
};

/** How an item, as the publisher sent it, names its row: `market 1.234`; undefined without a kind and an ID. */
export function rowName(item: { kind?: unknown } & Record<string, unknown>): string | undefined {
  const idKey = item.kind === 'sport' ? 'si' : item.kind === 'league' ? 'li' : item.kind === 'event' || item.kind === 'suspend' ? 'eid' : 'mid';
  const id = item[idKey];
  return typeof item.kind === 'string' && (typeof id === 'string' || typeof id === 'number') ? `${cut(item.kind)} ${cut(id)}` : undefined;
}

/** How an item names itself in an error: `item 3 (market 1.234)`. */
export function describe(index: number, item: { kind?: unknown } & Record<string, unknown>): string {
  const name = rowName(item);
  return name ? `item ${index} (${name})` : `item ${index}`;
}

/** The same, for an item already validated. */
export const describeItem = (index: number, item: ReferenceItem): string => `item ${index} (${item.kind} ${itemId(item)})`;
