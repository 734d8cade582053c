import type {
  BettingType, Certainty, Event, Market, MarketResult, MarketTerms, MarketType, NestedMarket, Runner, RunnerSettlement, RunnerTerms, SettledStatus, Settlement, Sport,
  TermsRunnerStatus,
} from './types.js';

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

/** A runner's terms on the wire: `st` its status, `af` its adjustment (reduction) factor %, `rd` when it was removed (ms), `hc` its handicap. */
export interface WireRunnerTerms {
  rid: number;
  st: TermsRunnerStatus;
  af?: number;
  rd?: number;
  hc?: number;
}

/**
 * A market's terms on the wire, on `market` frames, the terms route and `terms` ingest items,
 * each key only when its source gave it (docs/protocol.md#market-terms names them all).
 */
export interface WireTerms {
  bd?: number;
  tip?: boolean;
  sus?: number;
  bt?: BettingType;
  nw?: number;
  ewd?: number;
  bsp?: boolean;
  cc?: string;
  ven?: string;
  race?: string;
  mbr?: number;
  reg?: string[];
  lmin?: number;
  lmax?: number;
  lint?: number;
  r?: WireRunnerTerms[];
}

/** One runner's settlement on the wire: `dh` its dead-heat share, `vf` the share of stakes void. */
export interface WireRunnerSettlement {
  rid: number;
  st: SettledStatus;
  dh?: number;
  vf?: number;
}

/** How a market was settled beyond its result's keys: on `result` frames and the terms route. */
export interface WireSettlement {
  cert?: Certainty;
  at?: number;
  rs?: WireRunnerSettlement[];
}

/** A market's terms and settlement: one entry of `GET /api/v1/markets/terms`. */
export interface WireMarketTerms {
  mid: string;
  terms: WireTerms;
  settlement?: WireSettlement;
}

/** The domain's names of the terms and their wire keys, in the wire's order. */
export const TERMS_KEYS = [
  ['betDelay', 'bd'], ['turnInPlay', 'tip'], ['suspendAt', 'sus'], ['bettingType', 'bt'], ['winners', 'nw'], ['eachWayDivisor', 'ewd'],
  ['startingPrice', 'bsp'], ['country', 'cc'], ['venue', 'ven'], ['raceType', 'race'], ['commission', 'mbr'], ['regulators', 'reg'],
  ['lineMin', 'lmin'], ['lineMax', 'lmax'], ['lineInterval', 'lint'],
] as const satisfies readonly (readonly [keyof MarketTerms, keyof WireTerms])[];

export function runnerTermsToWire(r: RunnerTerms): WireRunnerTerms {
  const out: WireRunnerTerms = { rid: r.runnerId, st: r.status };
  if (r.adjustmentFactor !== undefined) out.af = r.adjustmentFactor;
  if (r.removedAt !== undefined) out.rd = r.removedAt;
  if (r.handicap !== undefined) out.hc = r.handicap;
  return out;
}

export function termsToWire(t: MarketTerms): WireTerms {
  const out: Record<string, unknown> = {};
  for (const [name, key] of TERMS_KEYS) if (t[name] !== undefined) out[key] = t[name];
  if (t.runners?.length) out.r = t.runners.map(runnerTermsToWire);
  return out as WireTerms;
}

function runnerSettlementToWire(r: RunnerSettlement): WireRunnerSettlement {
  const out: WireRunnerSettlement = { rid: r.runnerId, st: r.status };
  if (r.deadHeat !== undefined) out.dh = r.deadHeat;
  if (r.voidFactor !== undefined) out.vf = r.voidFactor;
  return out;
}

export function settlementToWire(s: Settlement): WireSettlement {
  const out: WireSettlement = {};
  if (s.certainty !== undefined) out.cert = s.certainty;
  if (s.settledAt !== undefined) out.at = s.settledAt;
  if (s.runners?.length) out.rs = s.runners.map(runnerSettlementToWire);
  return out;
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
