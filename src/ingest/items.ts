import type { MarketType } from '../refdata/types.js';
import type { WireRunner } from '../refdata/wire.js';

/**
 * Ingest speaks the REST vocabulary plus a `kind`. Every key but the ID is
 * optional: a partial item changes only what it carries, and creating a row
 * needs the keys listed in REQUIRED.
 */
interface SportItem { kind: 'sport'; si: number; na?: string; a?: boolean }
interface LeagueItem { kind: 'league'; li: number; si?: number; na?: string }
export interface EventItem {
  kind: 'event'; eid: number; na?: string; le?: string; st?: string; go?: boolean; ip?: boolean;
  si?: number; li?: number; tv?: string | null;
}
export interface NestedItem { mid: string; s: boolean; go: boolean; r: WireRunner[]; if?: unknown }
export interface MarketItem {
  kind: 'market'; mid: string; eid?: number; na?: string; si?: number; s?: boolean; go?: boolean;
  ty?: MarketType; rt?: boolean; if?: unknown; di?: number | null; bl?: number | null; r?: WireRunner[]; m?: NestedItem[];
}
export interface ResultItem { kind: 'result'; mid: string; res?: string; rt?: boolean; ia?: boolean; mt?: MarketType }

export type ReferenceItem = SportItem | LeagueItem | EventItem | MarketItem | ResultItem;

export const REQUIRED: Record<ReferenceItem['kind'], readonly string[]> = {
  sport: ['na'],
  league: ['si', 'na'],
  event: ['na', 'st', 'si', 'li'],
  market: ['eid', 'na', 'ty'],
  result: [],
};

/** How an item names itself in an error: `item 3 (market 1.234)`. */
export function describe(index: number, item: { kind?: unknown } & Record<string, unknown>): string {
  const idKey = item.kind === 'sport' ? 'si' : item.kind === 'league' ? 'li' : item.kind === 'event' ? 'eid' : 'mid';
  const id = item[idKey];
  return typeof item.kind === 'string' && (typeof id === 'string' || typeof id === 'number')
    ? `item ${index} (${item.kind} ${id})`
    : `item ${index}`;
}
