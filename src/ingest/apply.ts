import type pg from 'pg';
import type { WireRunner } from '../refdata/wire.js';
import { REQUIRED, type EventItem, type MarketItem, type NestedItem, type ReferenceItem, type ResultItem } from './items.js';

/** A problem with one item that Postgres found: a missing parent, a broken rule. */
export class ApplyError extends Error {}

export type Outcome = 'inserted' | 'updated';
type Client = Pick<pg.PoolClient, 'query'>;
type Columns = Record<string, unknown>;

/**
 * One row an item writes. Table and column names come from this file only;
 * every value travels as a parameter.
 */
interface Target {
  table: string;
  key: [string, unknown];
  /** The columns the item carries: written on create and on update. */
  given: Columns;
  /** Written only when the row is created. */
  createOnly?: Columns;
  required: readonly string[];
  /** How a refusal names the row when it is not the item itself. */
  name?: string;
  /** An existing row must hold this value in this column; otherwise the item is refused with `refusal`. */
  guard?: { column: string; value: unknown; refusal: string };
}

function defined(cols: Columns): Columns {
  return Object.fromEntries(Object.entries(cols).filter(([, v]) => v !== undefined));
}

/** The guard as a condition on the existing row, its value added to params. */
function guarded(t: Target, params: unknown[]): string | undefined {
  if (!t.guard) return undefined;
  params.push(t.guard.value);
  return `${t.table}.${t.guard.column} IS NOT DISTINCT FROM $${params.length}`;
}

/**
 * Creates the row, or changes only the given columns of the row that is
 * there, in one statement: two transactions creating one row at once queue on
 * its key instead of both inserting.
 */
async function upsert(db: Client, t: Target): Promise<Outcome> {
  const set = defined(t.given);
  const create = { ...defined(t.createOnly ?? {}), ...set };
  const missing = t.required.filter((r) => !(r in create));
  if (missing.length) return update(db, t, set, missing);
  const names = [t.key[0], ...Object.keys(create)];
  const params = [t.key[1], ...Object.values(create)];
  const changes = Object.keys(set).map((n) => `${n} = EXCLUDED.${n}`);
  const condition = changes.length ? guarded(t, params) : undefined;
  // With nothing to change an existing row is left as it is, so there is nothing for the guard to protect.
  const onConflict = changes.length ? `DO UPDATE SET ${changes.join(', ')}${condition ? ` WHERE ${condition}` : ''}` : 'DO NOTHING';
  const { rows } = await db.query<{ inserted: boolean }>(
    `INSERT INTO ${t.table} (${names.join(', ')}) VALUES (${names.map((_, i) => `$${i + 1}`).join(', ')})
     ON CONFLICT (${t.key[0]}) ${onConflict} RETURNING (xmax = 0) AS inserted`,
    params,
  );
  if (rows.length) return rows[0].inserted ? 'inserted' : 'updated';
  if (condition && t.guard) throw new ApplyError(t.guard.refusal);
  return 'updated';
}

/** An item without the keys to create its row may only change a row that exists. */
async function update(db: Client, t: Target, set: Columns, missing: string[]): Promise<Outcome> {
  const names = Object.keys(set);
  const params = [t.key[1], ...Object.values(set)];
  const condition = guarded(t, params);
  const where = `${t.key[0]} = $1${condition ? ` AND ${condition}` : ''}`;
  const found = names.length
    ? await db.query(`UPDATE ${t.table} SET ${names.map((n, i) => `${n} = $${i + 2}`).join(', ')} WHERE ${where}`, params)
    : await db.query(`SELECT 1 FROM ${t.table} WHERE ${where}`, params);
  if (found.rowCount) return 'updated';
  const subject = t.name ? `${t.name} ` : '';
  throw new ApplyError(`${subject}does not exist yet, and ${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} required to create it`);
}

/**
 * Makes the market's runners exactly the given list, in its order. Upserting
 * rather than deleting and reinserting lets two writers of one list meet on
 * its keys; rid order makes them lock the rows in the same order.
 */
async function replaceRunners(db: Client, mid: string, runners: WireRunner[]): Promise<void> {
  const rids = runners.map((r) => r.rid);
  await db.query('DELETE FROM runners WHERE mid = $1 AND NOT (rid = ANY($2::bigint[]))', [mid, rids]);
  if (!runners.length) return;
  await db.query(
    `INSERT INTO runners (mid, rid, pos, na)
     SELECT $1, rid, pos, na FROM unnest($2::bigint[], $3::int[], $4::text[]) AS given (rid, pos, na) ORDER BY rid
     ON CONFLICT (mid, rid) DO UPDATE SET pos = EXCLUDED.pos, na = EXCLUDED.na
      WHERE (runners.pos, runners.na) IS DISTINCT FROM (EXCLUDED.pos, EXCLUDED.na)`,
    [mid, rids, runners.map((_, i) => i), runners.map((r) => r.na)],
  );
}

const info = (o: { if?: unknown }): Columns => ('if' in o ? { has_if: true, info: o.if === null ? null : JSON.stringify(o.if) } : {});

async function applyEvent(db: Client, e: EventItem, keys?: Set<string>): Promise<Outcome> {
  if (e.le !== undefined) {
    const current = (await db.query<{ si: number; li: number }>('SELECT si, li FROM events WHERE eid = $1', [e.eid])).rows[0];
    const li = e.li ?? current?.li;
    if (li === undefined) throw new ApplyError('le needs li to name its league');
    keys?.add(`league:${li}`);
    // An event renames its league but never moves it to another sport.
    await upsert(db, { table: 'leagues', key: ['li', li], given: { na: e.le }, createOnly: { si: e.si ?? current?.si }, required: ['si'], name: `league ${li}` });
  }
  const given = { na: e.na, st: e.st, go: e.go, ip: e.ip, si: e.si, li: e.li, tv: e.tv };
  return upsert(db, { table: 'events', key: ['eid', e.eid], given, required: REQUIRED.event });
}

async function applyNested(db: Client, parent: string, eid: number, list: NestedItem[]): Promise<void> {
  await db.query('DELETE FROM markets WHERE parent_mid = $1 AND NOT (mid = ANY($2))', [parent, list.map((n) => n.mid)]);
  for (const [pos, n] of list.entries()) {
    await upsert(db, {
      table: 'markets', key: ['mid', n.mid], given: { parent_mid: parent, pos, eid, s: n.s, go: n.go, ...info(n) }, required: [],
      guard: { column: 'parent_mid', value: parent, refusal: `m[${pos}].mid ${n.mid} is already another market` },
    });
    await replaceRunners(db, n.mid, n.r);
  }
}

async function applyMarket(db: Client, m: MarketItem): Promise<Outcome> {
  const given = { eid: m.eid, na: m.na, ty: m.ty, s: m.s, go: m.go, rt: m.rt, di: m.di, bl: m.bl, ...info(m), ...(m.r ? { has_r: true } : {}) };
  const outcome = await upsert(db, {
    table: 'markets', key: ['mid', m.mid], given, required: REQUIRED.market,
    guard: { column: 'parent_mid', value: null, refusal: `mid ${m.mid} is already a nested market` },
  });
  const row = (await db.query<{ eid: number; si: number; ty: string }>(
    'SELECT m.eid, e.si, m.ty FROM markets m JOIN events e ON e.eid = m.eid WHERE m.mid = $1', [m.mid])).rows[0];
  if (m.si !== undefined && m.si !== row.si) throw new ApplyError(`si ${m.si} is not the sport of event ${row.eid} (${row.si})`);
  if (row.ty === 'player-race' && m.r) throw new ApplyError('r is not allowed on a player-race market: its runners go inside m');
  if (row.ty !== 'player-race' && m.m) throw new ApplyError('m is only allowed on a player-race market');
  if (m.r) await replaceRunners(db, m.mid, m.r);
  if (m.m) await applyNested(db, m.mid, row.eid, m.m);
  // A new type keeps the presence rules: a player-race holds no runners of its own, any other type no nested markets.
  if (m.ty !== undefined && row.ty === 'player-race') {
    await db.query('UPDATE markets SET has_r = false WHERE mid = $1 AND has_r', [m.mid]);
    await db.query('DELETE FROM runners WHERE mid = $1', [m.mid]);
  } else if (m.ty !== undefined && !m.m) {
    await db.query('DELETE FROM markets WHERE parent_mid = $1', [m.mid]);
  }
  return outcome;
}

async function applyResult(db: Client, r: ResultItem): Promise<Outcome> {
  const market = (await db.query<{ mt: string }>(
    'SELECT coalesce(m.ty, p.ty) AS mt FROM markets m LEFT JOIN markets p ON p.mid = m.parent_mid WHERE m.mid = $1', [r.mid])).rows[0];
  if (!market) throw new ApplyError(`market ${r.mid} does not exist`);
  if (r.mt !== undefined && r.mt !== market.mt) throw new ApplyError(`mt ${r.mt} is not the type of market ${r.mid} (${market.mt})`);
  return upsert(db, { table: 'results', key: ['mid', r.mid], given: { res: r.res, rt: r.rt, ia: r.ia }, required: REQUIRED.result });
}

/** Why Postgres refused a row, in words a publisher can act on. */
function explain(err: { code?: string; detail?: string; constraint?: string; message?: string }): string | undefined {
  if (err.code === '23503') return (err.detail ?? err.message ?? '').replace(/^Key \((\w+)\)=\(([^)]*)\) is not present in table "(\w+)"\.?$/, '$1 $2 does not exist in $3');
  if (err.code === '23514') return `breaks the rule ${err.constraint}`;
  if (err.code === '23502') return `${(err as { column?: string }).column ?? 'a column'} is required`;
  // Data exceptions: a value of the right type that Postgres still cannot store.
  if (err.code?.startsWith('22')) return `has a value the database cannot store (${err.message})`;
  return undefined;
}

/** The read model's key of the row an item names, as the NOTIFY trigger writes it: `market:1.5`. */
const modelKey = (item: ReferenceItem): string =>
  `${item.kind}:${item.kind === 'sport' ? item.si : item.kind === 'league' ? item.li : item.kind === 'event' ? item.eid : item.mid}`;

/**
 * Applies one item inside the caller's transaction, adding to `keys` the read
 * model's keys of the rows it writes (a market's runners and nested markets
 * reload with it), so the writer can have this pod show them before it acks.
 * Throws ApplyError for a problem with the item itself.
 */
export async function applyItem(db: Client, item: ReferenceItem, keys?: Set<string>): Promise<Outcome> {
  keys?.add(modelKey(item));
  try {
    switch (item.kind) {
      case 'sport': return await upsert(db, { table: 'sports', key: ['si', item.si], given: { na: item.na, a: item.a }, required: REQUIRED.sport });
      case 'league': return await upsert(db, { table: 'leagues', key: ['li', item.li], given: { si: item.si, na: item.na }, required: REQUIRED.league });
      case 'event': return await applyEvent(db, item, keys);
      case 'market': return await applyMarket(db, item);
      case 'result': return await applyResult(db, item);
    }
  } catch (err) {
    const why = explain(err as object);
    if (why) throw new ApplyError(why);
    throw err;
  }
}
