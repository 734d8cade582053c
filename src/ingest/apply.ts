import type pg from 'pg';
import type { MarketType, Runner } from '../refdata/types.js';
import { eventLeagueRefusal, marketChangeRefusal, sportChangeRefusal, termsChangeRefusal } from './validate-change.js';
import { REQUIRED, itemId, type EventItem, type LeagueItem, type MarketItem, type NestedItem, type ReferenceItem, type ResultItem, type RunnerTermsChange, type TermsItem } from './items.js';

/** A problem with one item that Postgres found: a missing parent, a broken rule. */
export class ApplyError extends Error {}

export type WriteOutcome = 'inserted' | 'updated';
export type Client = Pick<pg.PoolClient, 'query'>;
type Columns = Record<string, unknown>;

/**
 * One row an item writes. Table and column names come from this file only
 * (the columns keep the wire's short names: this is where the domain's names
 * meet them); every value travels as a parameter.
 */
interface RowWrite {
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
function guarded(t: RowWrite, params: unknown[]): string | undefined {
  if (!t.guard) return undefined;
  params.push(t.guard.value);
  return `${t.table}.${t.guard.column} IS NOT DISTINCT FROM $${params.length}`;
}

/**
 * Creates the row, or changes only the given columns of the row that is
 * there, in one statement: two transactions creating one row at once queue on
 * its key instead of both inserting.
 */
async function upsert(db: Client, t: RowWrite): Promise<WriteOutcome> {
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
async function update(db: Client, t: RowWrite, set: Columns, missing: string[]): Promise<WriteOutcome> {
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
async function replaceRunners(db: Client, mid: string, runners: Runner[]): Promise<void> {
  const rids = runners.map((r) => r.id);
  await db.query('DELETE FROM runners WHERE mid = $1 AND NOT (rid = ANY($2::bigint[]))', [mid, rids]);
  if (!runners.length) return;
  await db.query(
    `INSERT INTO runners (mid, rid, pos, na)
     SELECT $1, rid, pos, na FROM unnest($2::bigint[], $3::int[], $4::text[]) AS given (rid, pos, na) ORDER BY rid
     ON CONFLICT (mid, rid) DO UPDATE SET pos = EXCLUDED.pos, na = EXCLUDED.na
      WHERE (runners.pos, runners.na) IS DISTINCT FROM (EXCLUDED.pos, EXCLUDED.na)`,
    [mid, rids, runners.map((_, i) => i), runners.map((r) => r.name)],
  );
}

const info = (o: { info?: unknown }): Columns => (o.info !== undefined ? { has_if: true, info: o.info === null ? null : JSON.stringify(o.info) } : {});

/** A league, keeping its sport (validate-change.ts). */
async function applyLeague(db: Client, l: LeagueItem): Promise<WriteOutcome> {
  const stored = (await db.query<{ si: number }>('SELECT si FROM leagues WHERE li = $1', [l.id])).rows[0];
  const refusal = stored && sportChangeRefusal(stored.si, l);
  if (refusal) throw new ApplyError(refusal);
  return upsert(db, { table: 'leagues', key: ['li', l.id], given: { si: l.sportId, na: l.name }, required: REQUIRED.league });
}

/** An event, keeping its sport, in a league of that sport (validate-change.ts). */
async function applyEvent(db: Client, e: EventItem, keys?: Set<string>): Promise<WriteOutcome> {
  const current = (await db.query<{ si: number; li: number }>('SELECT si, li FROM events WHERE eid = $1', [e.id])).rows[0];
  const refusal = current && sportChangeRefusal(current.si, e);
  if (refusal) throw new ApplyError(refusal);
  if (e.leagueName !== undefined) {
    const li = e.leagueId ?? current?.li;
    if (li === undefined) throw new ApplyError('le needs li to name its league');
    keys?.add(`league:${li}`);
    // An event renames its league but never moves it to another sport.
    await upsert(db, { table: 'leagues', key: ['li', li], given: { na: e.leagueName }, createOnly: { si: e.sportId ?? current?.si }, required: ['si'], name: `league ${li}` });
  }
  const given = { na: e.name, st: e.startTime, go: e.concluded, ip: e.inPlay, si: e.sportId, li: e.leagueId, tv: e.liveTv };
  const outcome = await upsert(db, { table: 'events', key: ['eid', e.id], given, required: REQUIRED.event });
  if (e.leagueId === undefined && e.sportId === undefined) return outcome;
  const row = (await db.query<{ sportId: number; leagueId: number; leagueSportId: number }>(
    'SELECT e.si AS "sportId", e.li AS "leagueId", l.si AS "leagueSportId" FROM events e JOIN leagues l ON l.li = e.li WHERE e.eid = $1', [e.id])).rows[0];
  const league = eventLeagueRefusal(row);
  if (league) throw new ApplyError(league);
  return outcome;
}

async function applyNested(db: Client, parent: string, eid: number, list: NestedItem[]): Promise<void> {
  await db.query('DELETE FROM markets WHERE parent_mid = $1 AND NOT (mid = ANY($2))', [parent, list.map((n) => n.id)]);
  for (const [pos, n] of list.entries()) {
    await upsert(db, {
      table: 'markets', key: ['mid', n.id], given: { parent_mid: parent, pos, eid, s: n.isActive, go: n.concluded, ...info(n) }, required: [],
      guard: { column: 'parent_mid', value: parent, refusal: `m[${pos}].mid ${n.id} is already another market` },
    });
    await replaceRunners(db, n.id, n.runners);
  }
}

async function applyMarket(db: Client, m: MarketItem): Promise<WriteOutcome> {
  // A nested market's row is left to the guard below, which names what it is.
  const stored = (await db.query<{ ty: MarketType; eid: number }>('SELECT ty, eid FROM markets WHERE mid = $1 AND parent_mid IS NULL', [m.id])).rows[0];
  const refusal = stored && marketChangeRefusal({ type: stored.ty, eventId: stored.eid }, m);
  if (refusal) throw new ApplyError(refusal);
  const given = {
    eid: m.eventId, na: m.name, ty: m.type, s: m.isActive, go: m.concluded, rt: m.recalled, di: m.displayOrder, bl: m.ball,
    ...info(m), ...(m.runners ? { has_r: true } : {}),
  };
  const outcome = await upsert(db, {
    table: 'markets', key: ['mid', m.id], given, required: REQUIRED.market,
    guard: { column: 'parent_mid', value: null, refusal: `mid ${m.id} is already a nested market` },
  });
  const row = (await db.query<{ eid: number; si: number; ty: string }>(
    'SELECT m.eid, e.si, m.ty FROM markets m JOIN events e ON e.eid = m.eid WHERE m.mid = $1', [m.id])).rows[0];
  if (m.sportId !== undefined && m.sportId !== row.si) throw new ApplyError(`si ${m.sportId} is not the sport of event ${row.eid} (${row.si})`);
  if (row.ty === 'player-race' && m.runners) throw new ApplyError('r is not allowed on a player-race market: its runners go inside m');
  if (row.ty !== 'player-race' && m.nested) throw new ApplyError('m is only allowed on a player-race market');
  if (m.runners) await replaceRunners(db, m.id, m.runners);
  if (m.nested) await applyNested(db, m.id, row.eid, m.nested);
  return outcome;
}

/** A time in ms as the timestamptz column takes it; null stays null (it clears the column). */
const at = (ms: number | null | undefined): Date | null | undefined => (typeof ms === 'number' ? new Date(ms) : ms);

async function applyResult(db: Client, r: ResultItem): Promise<WriteOutcome> {
  const market = (await db.query<{ mt: string; rids: string[] }>(
    `SELECT coalesce(m.ty, p.ty) AS mt, array(SELECT x.rid FROM runners x WHERE x.mid = m.mid) AS rids
     FROM markets m LEFT JOIN markets p ON p.mid = m.parent_mid WHERE m.mid = $1`, [r.marketId])).rows[0];
  if (!market) throw new ApplyError(`market ${r.marketId} does not exist`);
  if (r.marketType !== undefined && r.marketType !== market.mt) throw new ApplyError(`mt ${r.marketType} is not the type of market ${r.marketId} (${market.mt})`);
  const s = r.settlement ?? {};
  // As a terms item's runners: a settlement naming a runner the market does not have settles no bet there is.
  const rids = new Set(market.rids.map(Number));
  for (const [i, x] of (s.runners ?? []).entries()) {
    if (!rids.has(x.runnerId)) throw new ApplyError(`rs[${i}].rid ${x.runnerId} is not a runner of market ${r.marketId}`);
  }
  const rs = s.runners?.map((x) => ({ rid: x.runnerId, st: x.status, dh: x.deadHeat, vf: x.voidFactor }));
  const given = { res: r.outcome, rt: r.recalled, ia: r.abandoned, cert: s.certainty, at: at(s.settledAt), rs: rs === undefined ? s.runners : JSON.stringify(rs) };
  return upsert(db, { table: 'results', key: ['mid', r.marketId], given, required: REQUIRED.result });
}

/** One runner's terms: created ACTIVE unless it says otherwise, then only the keys it gives change. */
async function applyRunnerTerms(db: Client, mid: string, r: RunnerTermsChange): Promise<void> {
  const given = defined({ st: r.status, af: r.adjustmentFactor, rd: at(r.removedAt), hc: r.handicap });
  const names = Object.keys(given);
  const set = names.length ? `DO UPDATE SET ${names.map((n) => `${n} = EXCLUDED.${n}`).join(', ')}` : 'DO NOTHING';
  await db.query(
    `INSERT INTO runner_terms (mid, rid${names.map((n) => `, ${n}`).join('')}) VALUES ($1, $2${names.map((_, i) => `, $${i + 3}`).join('')})
     ON CONFLICT (mid, rid) ${set}`,
    [mid, r.runnerId, ...Object.values(given)],
  );
}

/** A market's terms, and its runners' terms runner by runner: only a top-level market's, only its own runners'. */
async function applyTerms(db: Client, item: TermsItem): Promise<WriteOutcome> {
  const market = (await db.query<{ nested: boolean; ty: MarketType; rids: string[] }>(
    `SELECT m.parent_mid IS NOT NULL AS nested, m.ty, array(SELECT r.rid FROM runners r WHERE r.mid = m.mid) AS rids FROM markets m WHERE m.mid = $1`,
    [item.marketId])).rows[0];
  if (!market) throw new ApplyError(`market ${item.marketId} does not exist`);
  if (market.nested) throw new ApplyError(`market ${item.marketId} is nested in a player race: terms are its player race's`);
  const t = item.terms;
  const refusal = termsChangeRefusal(market.ty, item.marketId, t);
  if (refusal) throw new ApplyError(refusal);
  const given = {
    bd: t.betDelay, tip: t.turnInPlay, sus: at(t.suspendAt), bt: t.bettingType, nw: t.winners, ewd: t.eachWayDivisor, bsp: t.startingPrice,
    cc: t.country, ven: t.venue, race: t.raceType, mbr: t.commission, reg: t.regulators, lmin: t.lineMin, lmax: t.lineMax, lint: t.lineInterval,
  };
  const outcome = Object.keys(defined(given)).length || !item.runners
    ? await upsert(db, { table: 'market_terms', key: ['mid', item.marketId], given, required: REQUIRED.terms })
    : 'updated';
  const rids = new Set(market.rids.map(Number));
  for (const [i, r] of (item.runners ?? []).entries()) {
    if (!rids.has(r.runnerId)) throw new ApplyError(`r[${i}].rid ${r.runnerId} is not a runner of market ${item.marketId}`);
    await applyRunnerTerms(db, item.marketId, r);
  }
  return outcome;
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

/** The read model's key of the row an item names, as the NOTIFY trigger writes it: `market:1.5` (a market's terms are its market's). */
export const modelKey = (item: ReferenceItem): string => `${item.kind === 'terms' ? 'market' : item.kind}:${itemId(item)}`;

/**
 * Applies one item inside the caller's transaction, adding to `keys` the read
 * model's keys of the rows it writes (a market's runners and nested markets
 * reload with it), so the writer can have this pod show them before it acks.
 * Throws ApplyError for a problem with the item itself.
 */
export async function applyItem(db: Client, item: ReferenceItem, keys?: Set<string>): Promise<WriteOutcome> {
  keys?.add(modelKey(item));
  try {
    switch (item.kind) {
      case 'sport': return await upsert(db, { table: 'sports', key: ['si', item.id], given: { na: item.name, a: item.active }, required: REQUIRED.sport });
      case 'league': return await applyLeague(db, item);
      case 'event': return await applyEvent(db, item, keys);
      case 'market': return await applyMarket(db, item);
      case 'result': return await applyResult(db, item);
      case 'terms': return await applyTerms(db, item);
    }
  } catch (err) {
    const why = explain(err as object);
    if (why) throw new ApplyError(why);
    throw err;
  }
}
