import type pg from 'pg';
import type { Runner } from '../refdata/types.js';
import { REQUIRED, type EventItem, type MarketItem, type NestedItem, type ReferenceItem, type ResultItem } from './items.js';

/** A problem with one item that Postgres found: a missing parent, a broken rule. */
export class ApplyError extends Error {}

export type Outcome = 'inserted' | 'updated';
type Client = Pick<pg.PoolClient, 'query'>;
type Columns = Record<string, unknown>;

function defined(cols: Columns): Columns {
  return Object.fromEntries(Object.entries(cols).filter(([, v]) => v !== undefined));
}

/**
 * Changes only the given columns of an existing row, or creates the row when
 * every required column is given. UPDATE first because partial state changes
 * (a market suspending) far outnumber creations.
 */
async function upsert(db: Client, table: string, key: [string, unknown], given: Columns, required: readonly string[], where = ''): Promise<Outcome> {
  const cols = defined(given);
  const names = Object.keys(cols);
  const values = Object.values(cols);
  const found = names.length
    ? await db.query(`UPDATE ${table} SET ${names.map((n, i) => `${n} = $${i + 2}`).join(', ')} WHERE ${key[0]} = $1${where}`, [key[1], ...values])
    : await db.query(`SELECT 1 FROM ${table} WHERE ${key[0]} = $1${where}`, [key[1]]);
  if (found.rowCount) return 'updated';
  const missing = required.filter((r) => !(r in cols));
  if (missing.length) throw new ApplyError(`does not exist yet, and ${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} required to create it`);
  await db.query(
    `INSERT INTO ${table} (${[key[0], ...names].join(', ')}) VALUES (${[key[1], ...values].map((_, i) => `$${i + 1}`).join(', ')})`,
    [key[1], ...values],
  );
  return 'inserted';
}

async function replaceRunners(db: Client, mid: string, runners: Runner[]): Promise<void> {
  await db.query('DELETE FROM runners WHERE mid = $1', [mid]);
  if (!runners.length) return;
  await db.query(
    `INSERT INTO runners (mid, rid, pos, na) SELECT $1, * FROM unnest($2::bigint[], $3::int[], $4::text[])`,
    [mid, runners.map((r) => r.rid), runners.map((_, i) => i), runners.map((r) => r.na)],
  );
}

const info = (o: { if?: unknown }): Columns => ('if' in o ? { has_if: true, info: o.if === null ? null : JSON.stringify(o.if) } : {});

async function applyEvent(db: Client, e: EventItem): Promise<Outcome> {
  if (e.le !== undefined) {
    const current = (await db.query<{ si: number; li: number }>('SELECT si, li FROM events WHERE eid = $1', [e.eid])).rows[0];
    const li = e.li ?? current?.li;
    if (li === undefined) throw new ApplyError('le needs li to name its league');
    await upsert(db, 'leagues', ['li', li], { na: e.le }, ['si']).catch(async (err) => {
      if (!(err instanceof ApplyError)) throw err;
      const si = e.si ?? current?.si;
      if (si === undefined) throw new ApplyError(`league ${li} does not exist yet, and si is required to create it`);
      await db.query('INSERT INTO leagues (li, si, na) VALUES ($1, $2, $3)', [li, si, e.le]);
    });
  }
  return upsert(db, 'events', ['eid', e.eid], { na: e.na, st: e.st, go: e.go, ip: e.ip, si: e.si, li: e.li, tv: e.tv }, REQUIRED.event);
}

async function applyNested(db: Client, parent: string, eid: number, list: NestedItem[]): Promise<void> {
  await db.query('DELETE FROM markets WHERE parent_mid = $1 AND NOT (mid = ANY($2))', [parent, list.map((n) => n.mid)]);
  for (const [pos, n] of list.entries()) {
    await upsert(db, 'markets', ['mid', n.mid], { parent_mid: parent, pos, eid, s: n.s, go: n.go, ...info(n) }, [], ` AND parent_mid = '${parent}'`)
      .catch((err) => {
        if (err?.code === '23505') throw new ApplyError(`m[${pos}].mid ${n.mid} is already another market`);
        throw err;
      });
    await replaceRunners(db, n.mid, n.r);
  }
}

async function applyMarket(db: Client, m: MarketItem): Promise<Outcome> {
  const cols = { eid: m.eid, na: m.na, ty: m.ty, s: m.s, go: m.go, rt: m.rt, di: m.di, bl: m.bl, ...info(m), ...(m.r ? { has_r: true } : {}) };
  const outcome = await upsert(db, 'markets', ['mid', m.mid], cols, REQUIRED.market, ' AND parent_mid IS NULL');
  const row = (await db.query<{ eid: number; si: number; ty: string }>(
    'SELECT m.eid, e.si, m.ty FROM markets m JOIN events e ON e.eid = m.eid WHERE m.mid = $1', [m.mid])).rows[0];
  if (m.si !== undefined && m.si !== row.si) throw new ApplyError(`si ${m.si} is not the sport of event ${row.eid} (${row.si})`);
  if (row.ty === 'player-race' && m.r) throw new ApplyError('r is not allowed on a player-race market: its runners go inside m');
  if (row.ty !== 'player-race' && m.m) throw new ApplyError('m is only allowed on a player-race market');
  if (m.r) await replaceRunners(db, m.mid, m.r);
  if (m.m) await applyNested(db, m.mid, row.eid, m.m);
  return outcome;
}

async function applyResult(db: Client, r: ResultItem): Promise<Outcome> {
  const market = (await db.query<{ mt: string }>(
    'SELECT coalesce(m.ty, p.ty) AS mt FROM markets m LEFT JOIN markets p ON p.mid = m.parent_mid WHERE m.mid = $1', [r.mid])).rows[0];
  if (!market) throw new ApplyError(`market ${r.mid} does not exist`);
  if (r.mt !== undefined && r.mt !== market.mt) throw new ApplyError(`mt ${r.mt} is not the type of market ${r.mid} (${market.mt})`);
  return upsert(db, 'results', ['mid', r.mid], { res: r.res, rt: r.rt, ia: r.ia }, REQUIRED.result);
}

/** Why Postgres refused a row, in words a publisher can act on. */
function explain(err: { code?: string; detail?: string; constraint?: string; message?: string }): string | undefined {
  if (err.code === '23503') return (err.detail ?? err.message ?? '').replace(/^Key \((\w+)\)=\(([^)]*)\) is not present in table "(\w+)"\.?$/, '$1 $2 does not exist in $3');
  if (err.code === '23514') return `breaks the rule ${err.constraint}`;
  if (err.code === '23505') return err.detail ?? 'repeats an existing key';
  if (err.code === '23502') return `${(err as { column?: string }).column ?? 'a column'} is required`;
  // Data exceptions: a value of the right type that Postgres still cannot store.
  if (err.code?.startsWith('22')) return `has a value the database cannot store (${err.message})`;
  return undefined;
}

/** Applies one item inside the caller's transaction. Throws ApplyError for a problem with the item itself. */
export async function applyItem(db: Client, item: ReferenceItem): Promise<Outcome> {
  try {
    switch (item.kind) {
      case 'sport': return await upsert(db, 'sports', ['si', item.si], { na: item.na, a: item.a }, REQUIRED.sport);
      case 'league': return await upsert(db, 'leagues', ['li', item.li], { si: item.si, na: item.na }, REQUIRED.league);
      case 'event': return await applyEvent(db, item);
      case 'market': return await applyMarket(db, item);
      case 'result': return await applyResult(db, item);
    }
  } catch (err) {
    const why = explain(err as object);
    if (why) throw new ApplyError(why);
    throw err;
  }
}
