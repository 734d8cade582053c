/**
 * The REST answers of the baseline (node:http) and the fastify peer: the service's routes and
 * bytes, each request one query through a `pg` Pool (named statements, so prepared once per
 * connection). The SQL is that of src/refdata/queries.ts, with the filter and order the service
 * applies in memory moved into SQL. Only the HTTP server around it differs between the two.
 */
import pg from 'pg';

pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));

/** The pool both servers use: PG_POOL_MAX (10) connections, named after the server for the CPU accounting. */
export function openPool(applicationName: string): pg.Pool {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    process.stderr.write('DATABASE_URL is required\n');
    process.exit(2);
  }
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: Number(process.env.PG_POOL_MAX || 10),
    application_name: applicationName,
    statement_timeout: 5000,
    connectionTimeoutMillis: 2000,
  });
  pool.on('error', (err) => process.stderr.write(`pg idle client error: ${err.message}\n`));
  return pool;
}

export class BadRequest extends Error {}

export const HEALTH = JSON.stringify({ message: 'Server is running' });
export const errorBody = (message: string): string => JSON.stringify({ status: 0, message });

const INT = /^[1-9][0-9]{0,15}$/;
export const MID = /^[A-Za-z0-9._:-]{1,64}$/;

/** Every value of one query parameter, as the server's own parser gives them. */
export type Param = (name: string) => string[];

/** 1 to 50 comma-joined IDs, duplicates collapsed in first-seen order; the service's rules. */
function ids(param: Param, name: string, re: RegExp, required: boolean): string[] | undefined {
  const all = param(name);
  if (all.length === 0) {
    if (required) throw new BadRequest(`${name} is required`);
    return undefined;
  }
  if (all.length > 1) throw new BadRequest(`${name} is given more than once`);
  const parts = all[0].split(',');
  if (parts.length > 50 || parts.some((p) => !re.test(p))) throw new BadRequest(`${name} must list 1 to 50 IDs`);
  return [...new Set(parts)];
}

const SQL = {
  sports: { name: 'sports', text: 'SELECT si, na, a FROM sports ORDER BY si' },
  events: `SELECT e.eid, e.na, l.na AS le, e.st, e.go, e.ip, e.si, e.li, e.tv
             FROM events e JOIN leagues l ON l.li = e.li
            WHERE e.si = ANY($1::bigint[]) AND ($2::bigint[] IS NULL OR e.li = ANY($2::bigint[]))
            ORDER BY e.st, e.eid`,
  markets: `SELECT m.mid, m.eid, m.na, e.si, m.s, m.go, m.ty, m.rt, m.has_if, m.info, m.di, m.bl, m.has_r,
                   (SELECT coalesce(json_agg(json_build_object('rid', r.rid, 'na', r.na) ORDER BY r.pos), '[]')
                      FROM runners r WHERE r.mid = m.mid) AS runners,
                   (SELECT json_agg(json_build_object('mid', n.mid, 's', n.s, 'go', n.go,
                              'r', (SELECT coalesce(json_agg(json_build_object('rid', r.rid, 'na', r.na) ORDER BY r.pos), '[]')
                                      FROM runners r WHERE r.mid = n.mid),
                              'if', n.info) ORDER BY n.pos, n.mid)
                      FROM markets n WHERE n.parent_mid = m.mid) AS nested
              FROM markets m JOIN events e ON e.eid = m.eid
             WHERE m.parent_mid IS NULL AND m.eid = ANY($1::bigint[])
             ORDER BY coalesce(m.di, -1), m.mid COLLATE "C"`,
  results: `SELECT m.mid, coalesce(m.ty, p.ty) AS mt, coalesce(r.res, '') AS res,
                   coalesce(r.rt, false) AS rt, coalesce(r.ia, false) AS ia
              FROM markets m
              LEFT JOIN markets p ON p.mid = m.parent_mid
              LEFT JOIN results r ON r.mid = m.mid
             WHERE m.mid = ANY($1::text[])`,
};

interface EventRow { eid: number; na: string; le: string; st: Date; go: boolean; ip: boolean; si: number; li: number; tv: string | null }
interface MarketRow {
  mid: string; eid: number; na: string; si: number; s: boolean; go: boolean; ty: string; rt: boolean;
  has_if: boolean; info: unknown; di: number | null; bl: number | null; has_r: boolean; runners: unknown[]; nested: unknown[] | null;
}

/** `{"data":{"<id>":[...],...}}` in the order the IDs were asked for (an object would sort numeric keys). */
function keyed(order: string[], groups: Map<string, unknown[]>): string {
  return '{"data":{' + order.map((id) => `"${id}":${JSON.stringify(groups.get(id) ?? [])}`).join(',') + '}}';
}

function group<T>(rows: T[], key: (r: T) => string, value: (r: T) => unknown): Map<string, unknown[]> {
  const out = new Map<string, unknown[]>();
  for (const r of rows) {
    const k = key(r);
    let list = out.get(k);
    if (!list) out.set(k, (list = []));
    list.push(value(r));
  }
  return out;
}

export const ROUTES = ['/api/v1/sports', '/api/v1/sports/events', '/api/v1/events/markets', '/api/v1/markets/result'] as const;
export type Route = (typeof ROUTES)[number];

/** The body of a 200 answer; throws BadRequest for a bad query. */
export async function answer(pool: pg.Pool, route: Route, param: Param): Promise<string> {
  switch (route) {
    case '/api/v1/sports': {
      const { rows } = await pool.query(SQL.sports);
      return JSON.stringify(rows);
    }
    case '/api/v1/sports/events': {
      const si = ids(param, 'si', INT, true)!;
      const li = ids(param, 'li', INT, false);
      const { rows } = await pool.query<EventRow>({ name: 'events', text: SQL.events, values: [si, li ?? null] });
      return keyed(si, group(rows, (r) => String(r.si), (r) => ({
        eid: r.eid, na: r.na, le: r.le, st: r.st.toISOString(), go: r.go, ip: r.ip, si: r.si, li: r.li, tv: r.tv,
      })));
    }
    case '/api/v1/events/markets': {
      const eid = ids(param, 'eid', INT, true)!;
      const { rows } = await pool.query<MarketRow>({ name: 'markets', text: SQL.markets, values: [eid] });
      return keyed(eid, group(rows, (r) => String(r.eid), (r) => {
        const m: Record<string, unknown> = { mid: r.mid, eid: r.eid, na: r.na, si: r.si, s: r.s, go: r.go, ty: r.ty, rt: r.rt };
        if (r.has_if) m.if = r.info;
        if (r.di !== null) m.di = r.di;
        if (r.bl !== null) m.bl = r.bl;
        if (r.has_r) m.r = r.runners;
        if (r.ty === 'player-race') m.m = r.nested ?? [];
        return m;
      }));
    }
    case '/api/v1/markets/result': {
      const mid = ids(param, 'mid', MID, true)!;
      const { rows } = await pool.query<{ mid: string }>({ name: 'results', text: SQL.results, values: [mid] });
      const byMid = new Map(rows.map((r) => [r.mid, r]));
      return JSON.stringify(mid.map((m) => byMid.get(m)).filter((r) => r !== undefined));
    }
  }
}
