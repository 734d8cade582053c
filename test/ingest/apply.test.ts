/**
 * How reference writes meet: two pods writing the same rows at once, and the
 * stored market sets that concluded markets leave. Races are made certain
 * rather than hoped for: one transaction holds its rows uncommitted while the
 * service writes the same rows and waits on them.
 */
import t from 'tap';
import type pg from 'pg';
import { applyItem } from '../../src/ingest/apply.js';
import { validateReference } from '../../src/ingest/validate.js';
import { postJson, startTestService, type TestService } from '../helpers/service.js';
import { sqlClient } from '../helpers/db.js';
import { eventually } from '../helpers/wait.js';

type Obj = Record<string, unknown>;
type Reply = { status: number; message: string };
const ingest = (svc: TestService, ...data: Obj[]) => postJson<Reply>(svc.url, '/api/v1/ingest', { data });

const svc = await startTestService(t, { DEMO_DATA: 'off' });
const db = await sqlClient(t, svc.databaseUrl);

/** Everything one number's batch creates: a sport down to runners, a player-race with nested markets, a result. */
function creation(n: number): Obj[] {
  const si = 700 + n;
  const li = 70_000 + n;
  const eid = 7_000_000 + n;
  const race = `7.${n}.race`;
  const nested = (k: number) => ({ mid: `${race}.${k}`, s: true, go: false, r: [{ rid: 1, na: 'Ace' }, { rid: 2, na: 'Bolt' }] });
  return [
    { kind: 'sport', si, na: `Sport ${n}`, a: true },
    { kind: 'league', li, si, na: `League ${n}` },
    { kind: 'event', eid, na: `Event ${n}`, st: '2030-01-01T00:00:00.000Z', si, li },
    { kind: 'market', mid: `7.${n}`, eid, na: 'Match Odds', ty: 'match-odd', s: true, go: false, rt: false,
      r: [{ rid: 3, na: 'Draw' }, { rid: 1, na: 'Home' }, { rid: 2, na: 'Away' }] },
    { kind: 'market', mid: race, eid, na: 'Top Scorer', ty: 'player-race', s: true, go: false, rt: false, m: [nested(1), nested(2)] },
    { kind: 'result', mid: `7.${n}`, res: 'Home', rt: false, ia: false },
  ];
}

/** The rows creation(n) leaves, read straight from Postgres. */
async function stored(n: number): Promise<Obj> {
  const eid = 7_000_000 + n;
  const q = async (sql: string) => (await db.query(sql, [eid])).rows;
  return {
    sport: await q('SELECT s.si, s.na FROM sports s JOIN events e ON e.si = s.si WHERE e.eid = $1'),
    league: await q('SELECT l.li, l.na FROM leagues l JOIN events e ON e.li = l.li WHERE e.eid = $1'),
    markets: await q('SELECT mid, parent_mid, pos FROM markets WHERE eid = $1 ORDER BY mid'),
    runners: await q('SELECT r.mid, r.rid, r.na FROM runners r JOIN markets m ON m.mid = r.mid WHERE m.eid = $1 ORDER BY r.mid, r.pos'),
    results: await q('SELECT r.mid, r.res FROM results r JOIN markets m ON m.mid = r.mid WHERE m.eid = $1'),
  };
}

function expected(n: number): Obj {
  const race = `7.${n}.race`;
  return {
    sport: [{ si: 700 + n, na: `Sport ${n}` }],
    league: [{ li: 70_000 + n, na: `League ${n}` }],
    markets: [
      { mid: `7.${n}`, parent_mid: null, pos: 0 },
      { mid: race, parent_mid: null, pos: 0 },
      { mid: `${race}.1`, parent_mid: race, pos: 0 },
      { mid: `${race}.2`, parent_mid: race, pos: 1 },
    ],
    runners: [
      { mid: `7.${n}`, rid: 3, na: 'Draw' }, { mid: `7.${n}`, rid: 1, na: 'Home' }, { mid: `7.${n}`, rid: 2, na: 'Away' },
      { mid: `${race}.1`, rid: 1, na: 'Ace' }, { mid: `${race}.1`, rid: 2, na: 'Bolt' },
      { mid: `${race}.2`, rid: 1, na: 'Ace' }, { mid: `${race}.2`, rid: 2, na: 'Bolt' },
    ],
    results: [{ mid: `7.${n}`, res: 'Home' }],
  };
}

/** A transaction of its own that has applied the items and not committed, so it holds their rows. */
async function holding(items: Obj[]): Promise<pg.Client> {
  const c = await sqlClient(t, svc.databaseUrl);
  await c.query('BEGIN');
  for (const raw of items) {
    const checked = validateReference(raw);
    if ('error' in checked) throw new Error(checked.error);
    await applyItem(c, checked.item);
  }
  return c;
}

/** True once a statement of the service waits on a row lock. */
async function serviceWaits(): Promise<boolean> {
  const waiting = async () => (await db.query(
    `SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'odds-service' AND wait_event_type = 'Lock'`)).rows[0].n;
  return (await eventually(waiting, (n) => n > 0)) > 0;
}

t.test('a batch creating rows another transaction is creating at that moment succeeds', async (t) => {
  const held = await holding(creation(1));
  const reply = ingest(svc, ...creation(1));
  t.ok(await serviceWaits(), 'the service waits on the rows held');
  await held.query('COMMIT');
  t.same((await reply).body, { status: 1, message: 'Ingested 6 items' });
  t.same(await stored(1), expected(1));
});

t.test('an event creating its league while another transaction creates it succeeds', async (t) => {
  await ingest(svc, { kind: 'sport', si: 799, na: 'Sport 99', a: true });
  const event = { kind: 'event', eid: 7_000_099, na: 'Event 99', st: '2030-01-01T00:00:00.000Z', si: 799, li: 70_099, le: 'League 99' };
  const held = await holding([event]);
  const reply = ingest(svc, event);
  t.ok(await serviceWaits(), 'the service waits on the league held');
  await held.query('COMMIT');
  t.same((await reply).body, { status: 1, message: 'Ingested 1 item' });
  t.same((await db.query('SELECT li, si, na FROM leagues WHERE li = 70099')).rows, [{ li: 70_099, si: 799, na: 'League 99' }]);
});

t.test('two writers replacing one market\'s runner list at once both succeed, and the later list stands', async (t) => {
  await ingest(svc, ...creation(2));
  const held = await holding([{ kind: 'market', mid: '7.2', r: [{ rid: 2, na: 'Away' }, { rid: 4, na: 'Void' }] }]);
  const reply = ingest(svc,
    { kind: 'market', mid: '7.2', r: [{ rid: 4, na: 'Void' }, { rid: 5, na: 'Extra' }, { rid: 1, na: 'Home' }] },
    { kind: 'market', mid: '7.2.race', m: [{ mid: '7.2.race.2', s: true, go: false, r: [{ rid: 9, na: 'Cole' }] }] });
  t.ok(await serviceWaits(), 'the service waits on the market held');
  await held.query('COMMIT');
  t.same((await reply).body, { status: 1, message: 'Ingested 2 items' });
  const runners = await db.query(`SELECT mid, rid, pos, na FROM runners WHERE mid LIKE '7.2%' ORDER BY mid, pos`);
  t.same(runners.rows, [
    { mid: '7.2', rid: 4, pos: 0, na: 'Void' }, { mid: '7.2', rid: 5, pos: 1, na: 'Extra' }, { mid: '7.2', rid: 1, pos: 2, na: 'Home' },
    { mid: '7.2.race.2', rid: 9, pos: 0, na: 'Cole' },
  ]);
  t.same((await db.query(`SELECT mid FROM markets WHERE parent_mid = '7.2.race'`)).rows, [{ mid: '7.2.race.2' }], 'the nested list is replaced too');
});

t.test('two pods ingesting the same new rows at the same moment, many times over, never refuse', async (t) => {
  const other = await startTestService(t, { DEMO_DATA: 'off' }, svc.databaseUrl);
  const refused: string[] = [];
  for (let n = 10; n < 40; n++) {
    const replies = await Promise.all([ingest(svc, ...creation(n)), ingest(other, ...creation(n))]);
    for (const r of replies) if (r.status !== 200) refused.push(`${n}: ${r.status} ${r.body.message}`);
  }
  t.same(refused, []);
  const wrong = [];
  for (let n = 10; n < 40; n++) if (JSON.stringify(await stored(n)) !== JSON.stringify(expected(n))) wrong.push(n);
  t.same(wrong, [], 'every batch\'s rows are as given');
});

t.test('a top-level market cannot take a nested market\'s ID, nor a nested market a top-level one\'s', async (t) => {
  await ingest(svc, ...creation(3));
  const top = await ingest(svc, { kind: 'market', mid: '7.3.race.1', eid: 7_000_003, na: 'Taken', ty: 'goals', s: true, go: false, rt: false });
  t.same(top.body, { status: 0, message: 'item 0 (market 7.3.race.1): mid 7.3.race.1 is already a nested market' });
  const nested = await ingest(svc, { kind: 'market', mid: '7.3.race', m: [{ mid: '7.3', s: true, go: false, r: [] }] });
  t.same(nested.body, { status: 0, message: 'item 0 (market 7.3.race): m[0].mid 7.3 is already another market' });
  t.same((await db.query(`SELECT mid, parent_mid FROM markets WHERE mid IN ('7.3', '7.3.race.1') ORDER BY mid`)).rows,
    [{ mid: '7.3', parent_mid: null }, { mid: '7.3.race.1', parent_mid: '7.3.race' }]);
});

/** Stored sets of three clients: public through REST, a and b straight in the table. */
async function storeSets(mids: string[]): Promise<void> {
  await db.query(`INSERT INTO clients (id) VALUES ('a'), ('b') ON CONFLICT DO NOTHING`);
  await db.query(`INSERT INTO client_markets (client_id, mid) SELECT c, unnest($1::text[]) FROM unnest(ARRAY['a', 'b']) AS c`, [mids]);
  const r = await postJson<Reply>(svc.url, '/api/v1/subscribe', { data: mids });
  if (r.status !== 200) throw new Error(r.text);
}

const setsHolding = async (mids: string[]) =>
  (await db.query('SELECT client_id, mid FROM client_markets WHERE mid = ANY($1) ORDER BY client_id, mid', [mids])).rows;
const everyClient = (mids: string[]) => ['a', 'b', 'public'].flatMap((client_id) => mids.map((mid) => ({ client_id, mid })));

t.test('a market concluding through ingest leaves every client\'s stored set; others stay', async (t) => {
  await ingest(svc, ...creation(4));
  const mids = ['7.4', '7.4.race', '7.4.race.1'];
  await storeSets(mids);
  const r = await ingest(svc, { kind: 'market', mid: '7.4', go: true, s: false });
  t.equal(r.status, 200);
  t.same(await setsHolding(mids), everyClient(['7.4.race', '7.4.race.1']));
});

t.test('a player-race concluding takes its nested markets out of stored sets with it', async (t) => {
  await ingest(svc, ...creation(5));
  const mids = ['7.5', '7.5.race', '7.5.race.1', '7.5.race.2'];
  await storeSets(mids);
  const r = await ingest(svc, { kind: 'market', mid: '7.5.race', go: true });
  t.equal(r.status, 200);
  t.same(await setsHolding(mids), everyClient(['7.5']));
});

t.test('a nested market concluding alone leaves stored sets; its siblings and parent stay', async (t) => {
  await ingest(svc, ...creation(6));
  const mids = ['7.6.race', '7.6.race.1', '7.6.race.2'];
  await storeSets(mids);
  const r = await ingest(svc, { kind: 'market', mid: '7.6.race', m: [
    { mid: '7.6.race.1', s: false, go: true, r: [] }, { mid: '7.6.race.2', s: true, go: false, r: [] }] });
  t.equal(r.status, 200);
  t.same(await setsHolding(mids), everyClient(['7.6.race', '7.6.race.2']));
});

t.test('a market concluded by hand in SQL leaves stored sets too', async (t) => {
  await ingest(svc, ...creation(7));
  await storeSets(['7.7', '7.7.race']);
  await db.query(`UPDATE markets SET go = true WHERE mid = '7.7'`);
  t.same(await setsHolding(['7.7', '7.7.race']), everyClient(['7.7.race']));
});

t.test('a market listed already concluded leaves the sets of clients who subscribed before it was listed', async (t) => {
  await ingest(svc, ...creation(8));
  await storeSets(['7.8.late', '7.8']);
  const r = await ingest(svc, { kind: 'market', mid: '7.8.late', eid: 7_000_008, na: 'Late', ty: 'goals', s: false, go: true, rt: false });
  t.equal(r.status, 200);
  t.same(await setsHolding(['7.8.late', '7.8']), everyClient(['7.8']));
});
