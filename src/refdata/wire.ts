import type { Event, Market, MarketResult, MarketType, NestedMarket, Runner, Sport } from './types.js';

/**
 * The REST contract's shapes, key for key and in key order (docs/rest.md
 * lists them), and the translation of the domain types into them. The read
 * model serialises each element through these once, when it changes, so the
 * REST bodies and the ingest items publishers send speak only these keys.
 */
export interface WireSport {
  si: number;
  na: string;
  a: boolean;
}

export interface WireLeague {
  li: number;
  si: number;
  na: string;
}

export interface WireEvent {
  eid: number;
  na: string;
  le: string;
  st: string;
  go: boolean;
  ip: boolean;
  si: number;
  li: number;
  tv: string | null;
}

export interface WireRunner {
  rid: number;
  na: string;
}

export interface WireNestedMarket {
  mid: string;
  s: boolean;
  go: boolean;
  r: WireRunner[];
  if: unknown;
}

export interface WireMarket {
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
  r?: WireRunner[];
  m?: WireNestedMarket[];
}

export interface WireResult {
  mid: string;
  mt: MarketType;
  res: string;
  rt: boolean;
  ia: boolean;
}

export const sportToWire = (s: Sport): WireSport => ({ si: s.id, na: s.name, a: s.active });

export const eventToWire = (e: Event): WireEvent => ({
  eid: e.id, na: e.name, le: e.leagueName, st: e.startTime, go: e.concluded, ip: e.inPlay, si: e.sportId, li: e.leagueId, tv: e.liveTv,
});

export const runnerToWire = (r: Runner): WireRunner => ({ rid: r.id, na: r.name });

const nestedToWire = (n: NestedMarket): WireNestedMarket => ({
  mid: n.id, s: n.isActive, go: n.concluded, r: n.runners.map(runnerToWire), if: n.info,
});

/** Optional keys only where the market has them (the presence rules of docs/rest.md). */
export function marketToWire(m: Market): WireMarket {
  const out: WireMarket = { mid: m.id, eid: m.eventId, na: m.name, si: m.sportId, s: m.isActive, go: m.concluded, ty: m.type, rt: m.recalled };
  if (m.info !== undefined) out.if = m.info;
  if (m.displayOrder !== undefined) out.di = m.displayOrder;
  if (m.ball !== undefined) out.bl = m.ball;
  if (m.runners) out.r = m.runners.map(runnerToWire);
  if (m.nested) out.m = m.nested.map(nestedToWire);
  return out;
}

export const resultToWire = (r: MarketResult): WireResult => ({
  mid: r.marketId, mt: r.marketType, res: r.outcome, rt: r.recalled, ia: r.abandoned,
});
