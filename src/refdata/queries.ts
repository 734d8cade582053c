import type pg from 'pg';
import type { Event, Market, MarketResult, MarketType, NestedMarket, Runner, Sport } from './types.js';

/**
 * Loads rows in their wire shapes. Each loader takes an optional ID filter so
 * one query serves both the full load at start and the targeted reloads that
 * follow a NOTIFY.
 */
type Queryable = Pick<pg.Pool, 'query'>;

function filter(column: string, ids: readonly (string | number)[] | undefined, joiner = 'WHERE'): string {
  return ids ? ` ${joiner} ${column} = ANY($1)` : '';
}

export async function loadSports(db: Queryable, ids?: number[]): Promise<Sport[]> {
  const { rows } = await db.query<Sport>(`SELECT si, na, a FROM sports${filter('si', ids)} ORDER BY si`, ids ? [ids] : []);
  return rows.map((r) => ({ si: r.si, na: r.na, a: r.a }));
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
    eid: r.eid, na: r.na, le: r.le, st: r.st.toISOString(), go: r.go, ip: r.ip, si: r.si, li: r.li, tv: r.tv,
  }));
}

interface MarketRow {
  mid: string; eid: number; na: string; si: number; s: boolean; go: boolean; ty: MarketType; rt: boolean;
  has_if: boolean; info: unknown; di: number | null; bl: number | null; has_r: boolean;
  runners: Runner[]; nested: (NestedMarket & { has_if: boolean })[] | null;
}

const RUNNERS = (alias: string): string =>
  `(SELECT coalesce(json_agg(json_build_object('rid', r.rid, 'na', r.na) ORDER BY r.pos), '[]')
      FROM runners r WHERE r.mid = ${alias}.mid)`;

/** Top-level markets with their runners and nested markets, by market ID or by event ID. */
export async function loadMarkets(db: Queryable, by?: { mids?: string[]; eids?: number[] }): Promise<Market[]> {
  const where = by?.mids ? filter('m.mid', by.mids, 'AND') : by?.eids ? filter('m.eid', by.eids, 'AND') : '';
  const ids = by?.mids ?? by?.eids;
  const { rows } = await db.query<MarketRow>(
    `SELECT m.mid, m.eid, m.na, e.si, m.s, m.go, m.ty, m.rt, m.has_if, m.info, m.di, m.bl, m.has_r,
            ${RUNNERS('m')} AS runners,
            (SELECT json_agg(json_build_object('mid', n.mid, 's', n.s, 'go', n.go, 'r', ${RUNNERS('n')}, 'if', n.info)
                             ORDER BY n.pos, n.mid)
               FROM markets n WHERE n.parent_mid = m.mid) AS nested
       FROM markets m JOIN events e ON e.eid = m.eid
      WHERE m.parent_mid IS NULL${where}`,
    ids ? [ids] : [],
  );
  return rows.map(toMarket);
}

function toMarket(r: MarketRow): Market {
  const m: Market = { mid: r.mid, eid: r.eid, na: r.na, si: r.si, s: r.s, go: r.go, ty: r.ty, rt: r.rt };
  if (r.has_if) m.if = r.info;
  if (r.di !== null) m.di = r.di;
  if (r.bl !== null) m.bl = r.bl;
  if (r.has_r) m.r = r.runners;
  if (r.ty === 'player-race') m.m = r.nested ?? [];
  return m;
}

/** Results of top-level and nested markets; a market with no result row answers the unsettled default. */
export async function loadResults(db: Queryable, mids?: string[]): Promise<MarketResult[]> {
  const { rows } = await db.query<MarketResult>(
    `SELECT m.mid, coalesce(m.ty, p.ty) AS mt, coalesce(r.res, '') AS res,
            coalesce(r.rt, false) AS rt, coalesce(r.ia, false) AS ia
       FROM markets m
       LEFT JOIN markets p ON p.mid = m.parent_mid
       LEFT JOIN results r ON r.mid = m.mid${filter('m.mid', mids)}`,
    mids ? [mids] : [],
  );
  return rows.map((r) => ({ mid: r.mid, mt: r.mt, res: r.res, rt: r.rt, ia: r.ia }));
}

/** Nested market ID to its player-race parent, so a runner change of a nested market reloads the parent. */
export async function loadNestedParents(db: Queryable, parents?: string[]): Promise<[string, string][]> {
  const { rows } = await db.query<{ mid: string; parent_mid: string }>(
    `SELECT mid, parent_mid FROM markets WHERE parent_mid IS NOT NULL${filter('parent_mid', parents, 'AND')}`,
    parents ? [parents] : [],
  );
  return rows.map((r) => [r.mid, r.parent_mid]);
}
