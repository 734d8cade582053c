import type pg from 'pg';
import type { Event, Market, MarketResult, MarketTerms, MarketType, NestedMarket, Runner, RunnerSettlement, RunnerTerms, Sport, Settlement } from './types.js';

/**
 * Loads rows as domain objects: the columns keep the wire's short names, and
 * this file is where they become readable ones. Each loader takes an optional
 * ID filter so one query serves both the full load at start and the targeted
 * reloads that follow a NOTIFY.
 */
type Queryable = Pick<pg.Pool, 'query'>;

function filter(column: string, ids: readonly (string | number)[] | undefined, joiner = 'WHERE'): string {
  return ids ? ` ${joiner} ${column} = ANY($1)` : '';
}

export async function loadSports(db: Queryable, ids?: number[]): Promise<Sport[]> {
  const { rows } = await db.query<{ si: number; na: string; a: boolean }>(`SELECT si, na, a FROM sports${filter('si', ids)} ORDER BY si`, ids ? [ids] : []);
  return rows.map((r) => ({ id: r.si, name: r.na, active: r.a }));
}

interface EventRow { eid: number; na: string; le: string; st: Date; go: boolean; ip: boolean; si: number; li: number; tv: string | null }

export async function loadEvents(db: Queryable, by?: { eids?: number[]; lis?: number[] }): Promise<Event[]> {
  const where = by?.eids ? filter('e.eid', by.eids) : by?.lis ? filter('e.li', by.lis) : '';
  const ids = by?.eids ?? by?.lis;
  const { rows } = await db.query<EventRow>(
    `SELECT e.eid, e.na, l.na AS le, e.st, e.go, e.ip, e.si, e.li, e.tv
       FROM events e JOIN leagues l ON l.li = e.li${where}`,
    ids ? [ids] : [],
  );
  return rows.map((r) => ({
    id: r.eid, name: r.na, leagueName: r.le, startTime: r.st.toISOString(), concluded: r.go, inPlay: r.ip, sportId: r.si, leagueId: r.li, liveTv: r.tv,
  }));
}

type Nullable<T> = { [K in keyof T]-?: T[K] | null };
type TermsRow = Nullable<Omit<MarketTerms, 'runners'>>;
type RunnerTermsRow = Nullable<RunnerTerms>;

interface MarketRow {
  mid: string; eid: number; na: string; si: number; s: boolean; go: boolean; ty: MarketType; rt: boolean;
  has_if: boolean; info: unknown; di: number | null; bl: number | null; has_r: boolean;
  runners: Runner[]; nested: NestedMarket[] | null;
  terms: TermsRow | null; runner_terms: RunnerTermsRow[] | null;
}

/** A time column as ms since the epoch, the form every frame gives times in. */
const MS = (column: string): string => `(extract(epoch FROM ${column}) * 1000)::float8`;

const TERMS = (alias: string): string =>
  `(SELECT json_build_object('betDelay', t.bd, 'turnInPlay', t.tip, 'suspendAt', ${MS('t.sus')}, 'bettingType', t.bt, 'winners', t.nw,
            'eachWayDivisor', t.ewd, 'startingPrice', t.bsp, 'country', t.cc, 'venue', t.ven, 'raceType', t.race, 'commission', t.mbr,
            'regulators', t.reg, 'lineMin', t.lmin, 'lineMax', t.lmax, 'lineInterval', t.lint)
      FROM market_terms t WHERE t.mid = ${alias}.mid)`;

const RUNNER_TERMS = (alias: string): string =>
  `(SELECT json_agg(json_build_object('runnerId', t.rid, 'status', t.st, 'adjustmentFactor', t.af, 'removedAt', ${MS('t.rd')}, 'handicap', t.hc)
                    ORDER BY r.pos)
      FROM runner_terms t JOIN runners r ON r.mid = t.mid AND r.rid = t.rid WHERE t.mid = ${alias}.mid)`;

/** An object less its null values: a term Postgres holds as null was never given. */
function given<T extends object>(row: Nullable<T>): T {
  return Object.fromEntries(Object.entries(row).filter(([, v]) => v !== null)) as T;
}

function termsOf(row: TermsRow | null, runners: RunnerTermsRow[] | null): MarketTerms | undefined {
  if (!row && !runners) return undefined;
  const terms: MarketTerms = row ? given(row) : {};
  if (runners) terms.runners = runners.map((r) => given(r));
  return terms;
}

const RUNNERS = (alias: string): string =>
  `(SELECT coalesce(json_agg(json_build_object('id', r.rid, 'name', r.na) ORDER BY r.pos), '[]')
      FROM runners r WHERE r.mid = ${alias}.mid)`;

/** Top-level markets with their runners and nested markets, by market ID or by event ID. */
export async function loadMarkets(db: Queryable, by?: { mids?: string[]; eids?: number[] }): Promise<Market[]> {
  const where = by?.mids ? filter('m.mid', by.mids, 'AND') : by?.eids ? filter('m.eid', by.eids, 'AND') : '';
  const ids = by?.mids ?? by?.eids;
  const { rows } = await db.query<MarketRow>(
    `SELECT m.mid, m.eid, m.na, e.si, m.s, m.go, m.ty, m.rt, m.has_if, m.info, m.di, m.bl, m.has_r,
            ${RUNNERS('m')} AS runners, ${TERMS('m')} AS terms, ${RUNNER_TERMS('m')} AS runner_terms,
            (SELECT json_agg(json_build_object('id', n.mid, 'isActive', n.s, 'concluded', n.go, 'runners', ${RUNNERS('n')}, 'info', n.info)
                             ORDER BY n.pos, n.mid)
               FROM markets n WHERE n.parent_mid = m.mid) AS nested
       FROM markets m JOIN events e ON e.eid = m.eid
      WHERE m.parent_mid IS NULL${where}`,
    ids ? [ids] : [],
  );
  return rows.map(toMarket);
}

function toMarket(r: MarketRow): Market {
  const m: Market = { id: r.mid, eventId: r.eid, name: r.na, sportId: r.si, isActive: r.s, concluded: r.go, type: r.ty, recalled: r.rt };
  if (r.has_if) m.info = r.info;
  if (r.di !== null) m.displayOrder = r.di;
  if (r.bl !== null) m.ball = r.bl;
  if (r.has_r) m.runners = r.runners;
  if (r.ty === 'player-race') m.nested = r.nested ?? [];
  const terms = termsOf(r.terms, r.runner_terms);
  if (terms) m.terms = terms;
  return m;
}

interface ResultRow extends Omit<MarketResult, 'settlement'> {
  certainty: Settlement['certainty'] | null;
  settledAt: number | null;
  runners: RunnerSettlementRow[] | null;
}

/** A runner's settlement as stored: its wire keys (a jsonb array of them). */
interface RunnerSettlementRow { rid: number; st: RunnerSettlement['status']; dh?: number; vf?: number }

function settlementOf(r: ResultRow): Settlement | undefined {
  if (r.certainty === null && r.settledAt === null && r.runners === null) return undefined;
  const out: Settlement = {};
  if (r.certainty !== null) out.certainty = r.certainty;
  if (r.settledAt !== null) out.settledAt = r.settledAt;
  if (r.runners) {
    out.runners = r.runners.map((x) => {
      const runner: RunnerSettlement = { runnerId: x.rid, status: x.st };
      if (x.dh !== undefined) runner.deadHeat = x.dh;
      if (x.vf !== undefined) runner.voidFactor = x.vf;
      return runner;
    });
  }
  return out;
}

/** Results of top-level and nested markets; a market with no result row answers the unsettled default. */
export async function loadResults(db: Queryable, mids?: string[]): Promise<MarketResult[]> {
  const { rows } = await db.query<ResultRow>(
    `SELECT m.mid AS "marketId", coalesce(m.ty, p.ty) AS "marketType", coalesce(r.res, '') AS outcome,
            coalesce(r.rt, false) AS recalled, coalesce(r.ia, false) AS abandoned,
            r.cert AS certainty, ${MS('r.at')} AS "settledAt", r.rs AS runners
       FROM markets m
       LEFT JOIN markets p ON p.mid = m.parent_mid
       LEFT JOIN results r ON r.mid = m.mid${filter('m.mid', mids)}`,
    mids ? [mids] : [],
  );
  return rows.map((r) => {
    const result: MarketResult = { marketId: r.marketId, marketType: r.marketType, outcome: r.outcome, recalled: r.recalled, abandoned: r.abandoned };
    const settlement = settlementOf(r);
    if (settlement) result.settlement = settlement;
    return result;
  });
}

/** Nested market ID to its player-race parent, so a runner change of a nested market reloads the parent. */
export async function loadNestedParents(db: Queryable, parents?: string[]): Promise<[string, string][]> {
  const { rows } = await db.query<{ mid: string; parent_mid: string }>(
    `SELECT mid, parent_mid FROM markets WHERE parent_mid IS NOT NULL${filter('parent_mid', parents, 'AND')}`,
    parents ? [parents] : [],
  );
  return rows.map((r) => [r.mid, r.parent_mid]);
}
