/**
 * The REST contract over one service: first each body byte for byte against Postgres while the
 * demo set is as loaded, then the keys, orders and answers route by route (the last test
 * changes a market's name, and nothing after it reads that market).
 */
import t from 'tap';
import { http, postJson, startTestService } from '../helpers/service.js';
import { sqlClient } from '../helpers/db.js';
import { eventually } from '../helpers/wait.js';
import { MARKET_TYPES } from '../../src/refdata/types.js';

type Obj = Record<string, unknown>;
const svc = await startTestService(t);
const get = <T = unknown>(path: string) => http<T>(svc.url, path);

/**
 * The REST bodies, byte for byte, against what Postgres holds: each element
 * written here from its rows with the contract's keys in the contract's order
 * and its presence rules (docs/rest.md), independently of how the service
 * names things inside. A changed key, order, or number format fails here.
 */
const db = await sqlClient(t, svc.databaseUrl);
const text = async (path: string): Promise<string> => {
  const r = await http(svc.url, path);
  t.equal(r.status, 200, path);
  return r.text;
};
// One client asked by several markets at once: queued here, as pg's own queueing of a busy client is going away (pg 9).
let asked: Promise<unknown> = Promise.resolve();
const rows = (sql: string, params: unknown[] = []): Promise<Obj[]> => {
  const answer = asked.then(() => db.query(sql, params));
  asked = answer.catch(() => undefined);
  return answer.then((r) => r.rows as Obj[]);
};
const chunks = <T>(list: T[]): T[][] => Array.from({ length: Math.ceil(list.length / 50) }, (_, i) => list.slice(50 * i, 50 * i + 50));

const runners = (mid: unknown) => rows('SELECT rid, na FROM runners WHERE mid = $1 ORDER BY pos', [mid]).then((r) => r.map((x) => ({ rid: Number(x.rid), na: x.na })));

async function market(m: Obj): Promise<Obj> {
  const out: Obj = { mid: m.mid, eid: Number(m.eid), na: m.na, si: Number(m.si), s: m.s, go: m.go, ty: m.ty, rt: m.rt };
  if (m.has_if) out.if = m.info;
  if (m.di !== null) out.di = m.di;
  if (m.bl !== null) out.bl = m.bl;
  if (m.has_r) out.r = await runners(m.mid);
  if (m.ty === 'player-race') {
    const nested = await rows('SELECT mid, s, go, info FROM markets WHERE parent_mid = $1 ORDER BY pos, mid', [m.mid]);
    out.m = await Promise.all(nested.map(async (n) => ({ mid: n.mid, s: n.s, go: n.go, r: await runners(n.mid), if: n.info })));
  }
  return out;
}

t.test('sports', async (t) => {
  const expected = (await rows('SELECT si, na, a FROM sports ORDER BY si')).map((s) => ({ si: Number(s.si), na: s.na, a: s.a }));
  t.ok(expected.length > 0);
  t.equal(await text('/api/v1/sports'), JSON.stringify(expected));
});

t.test('events of every sport, by start then ID', async (t) => {
  const sis = (await rows('SELECT si FROM sports ORDER BY si')).map((s) => Number(s.si));
  const events = await rows('SELECT e.eid, e.na, l.na AS le, e.st, e.go, e.ip, e.si, e.li, e.tv FROM events e JOIN leagues l ON l.li = e.li ORDER BY e.st, e.eid');
  t.ok(events.some((e) => e.tv !== null) && events.some((e) => e.tv === null), 'events with and without live TV');
  const data = Object.fromEntries(sis.map((si) => [si, events.filter((e) => Number(e.si) === si).map((e) => ({
    eid: Number(e.eid), na: e.na, le: e.le, st: (e.st as Date).toISOString(), go: e.go, ip: e.ip, si: Number(e.si), li: Number(e.li), tv: e.tv,
  }))]));
  // The body follows the request's order, which an object with integer keys would not keep.
  const expected = `{"data":{${sis.map((si) => `"${si}":${JSON.stringify(data[si])}`).join(',')}}}`;
  t.equal(await text(`/api/v1/sports/events?si=${sis.join(',')}`), expected);
});

t.test('markets of every event, by display ID then market ID', async (t) => {
  const all = await rows(
    `SELECT m.mid, m.eid, m.na, e.si, m.s, m.go, m.ty, m.rt, m.has_if, m.info, m.di, m.bl, m.has_r
       FROM markets m JOIN events e ON e.eid = m.eid WHERE m.parent_mid IS NULL`);
  const shown = await Promise.all(all.map(market));
  for (const key of ['if', 'di', 'bl', 'r', 'm']) t.ok(shown.some((m) => key in m) && shown.some((m) => !(key in m)), `markets with and without ${key}`);
  const eids = [...new Set(shown.map((m) => m.eid as number))].sort((a, b) => a - b);
  const order = (a: Obj, b: Obj) => ((a.di as number | undefined) ?? -1) - ((b.di as number | undefined) ?? -1) || (a.mid! < b.mid! ? -1 : a.mid! > b.mid! ? 1 : 0);
  for (const part of chunks(eids)) {
    const expected = `{"data":{${part.map((eid) => `"${eid}":${JSON.stringify(shown.filter((m) => m.eid === eid).sort(order))}`).join(',')}}}`;
    t.equal(await text(`/api/v1/events/markets?eid=${part.join(',')}`), expected, `events ${part[0]}..`);
  }
});

t.test('results of every market, nested ones included, in the order asked', async (t) => {
  const results = await rows(
    `SELECT m.mid, coalesce(m.ty, p.ty) AS mt, coalesce(r.res, '') AS res, coalesce(r.rt, false) AS rt, coalesce(r.ia, false) AS ia
       FROM markets m LEFT JOIN markets p ON p.mid = m.parent_mid LEFT JOIN results r ON r.mid = m.mid ORDER BY m.mid DESC`);
  t.ok(results.some((r) => r.res !== '') && results.some((r) => r.rt === true) && results.some((r) => r.ia === true));
  for (const part of chunks(results)) {
    const expected = JSON.stringify(part.map((r) => ({ mid: r.mid, mt: r.mt, res: r.res, rt: r.rt, ia: r.ia })));
    t.equal(await text(`/api/v1/markets/result?mid=${part.map((r) => r.mid).join(',')}`), expected, `markets ${part[0].mid}..`);
  }
});

// Route by route.

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

t.test('GET /health answers that the server is running', async (t) => {
  const r = await get('/health');
  t.equal(r.status, 200);
  t.same(r.body, { message: 'Server is running' });
  t.match(r.headers.get('content-type'), /application\/json/);
});

t.test('GET /ready answers 200 once the read model is loaded', async (t) => {
  const r = await get('/ready');
  t.equal(r.status, 200);
});

t.test('sports: every sport with exactly si, na, a, ordered by si', async (t) => {
  const r = await get<Obj[]>('/api/v1/sports');
  t.equal(r.status, 200);
  t.ok(r.body.length >= 4);
  for (const s of r.body) {
    t.same(Object.keys(s), ['si', 'na', 'a']);
    t.type(s.si, 'number');
    t.type(s.na, 'string');
    t.type(s.a, 'boolean');
  }
  const ids = r.body.map((s) => s.si as number);
  t.same(ids, [...ids].sort((a, b) => a - b));
});

t.test('events: data maps each requested sport ID to its events with all nine keys', async (t) => {
  const r = await get<{ data: Record<string, Obj[]> }>('/api/v1/sports/events?si=4,1');
  t.equal(r.status, 200);
  t.same(Object.keys(r.body.data).sort(), ['1', '4']);
  for (const [si, events] of Object.entries(r.body.data)) {
    t.ok(events.length > 0, `sport ${si} has events`);
    for (const e of events) {
      t.same(Object.keys(e), ['eid', 'na', 'le', 'st', 'go', 'ip', 'si', 'li', 'tv']);
      t.equal(e.si, Number(si));
      t.match(e.st, ISO_MS);
      t.ok(e.tv === null || typeof e.tv === 'string');
    }
  }
});

t.test('events: ordered by start time, then event ID', async (t) => {
  const r = await get<{ data: Record<string, Obj[]> }>('/api/v1/sports/events?si=4,1,2,7');
  for (const events of Object.values(r.body.data)) {
    const keys = events.map((e) => [e.st as string, e.eid as number] as const);
    const sorted = [...keys].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
    t.same(keys, sorted);
  }
});

t.test('events: li keeps only events of those leagues', async (t) => {
  const all = await get<{ data: Record<string, Obj[]> }>('/api/v1/sports/events?si=4');
  const league = all.body.data['4'][0].li as number;
  const r = await get<{ data: Record<string, Obj[]> }>(`/api/v1/sports/events?si=4&li=${league}`);
  t.ok(r.body.data['4'].length > 0);
  t.ok(r.body.data['4'].length < all.body.data['4'].length);
  t.ok(r.body.data['4'].every((e) => e.li === league));
});

t.test('events: an unknown sport maps to an empty array; duplicates collapse', async (t) => {
  const r = await get<{ data: Record<string, Obj[]> }>('/api/v1/sports/events?si=999999,4,4');
  t.equal(r.status, 200);
  t.same(Object.keys(r.body.data).sort(), ['4', '999999']);
  t.same(r.body.data['999999'], []);
});

t.test('events: 50 IDs are accepted', async (t) => {
  const ids = Array.from({ length: 50 }, (_, i) => i + 1).join(',');
  const r = await get<{ data: Obj }>(`/api/v1/sports/events?si=${ids}`);
  t.equal(r.status, 200);
  t.equal(Object.keys(r.body.data).length, 50);
});

async function allMarkets(): Promise<Obj[]> {
  const events = await get<{ data: Record<string, Obj[]> }>('/api/v1/sports/events?si=1,2,4,7');
  const eids = Object.values(events.body.data).flat().map((e) => e.eid);
  const out: Obj[] = [];
  for (let i = 0; i < eids.length; i += 50) {
    const r = await get<{ data: Record<string, Obj[]> }>(`/api/v1/events/markets?eid=${eids.slice(i, i + 50).join(',')}`);
    out.push(...Object.values(r.body.data).flat());
  }
  return out;
}

t.test('markets: required keys with their types on every market', async (t) => {
  const markets = await allMarkets();
  t.ok(markets.length > 50);
  for (const m of markets) {
    t.type(m.mid, 'string');
    t.type(m.eid, 'number');
    t.type(m.na, 'string');
    t.type(m.si, 'number');
    t.type(m.s, 'boolean');
    t.type(m.go, 'boolean');
    t.type(m.rt, 'boolean');
    t.ok((MARKET_TYPES as readonly unknown[]).includes(m.ty), `${m.mid} type ${m.ty}`);
    const allowed = ['mid', 'eid', 'na', 'si', 's', 'go', 'ty', 'rt', 'if', 'di', 'bl', 'r', 'm'];
    t.same(Object.keys(m).filter((k) => !allowed.includes(k)), [], `${m.mid} has only contract keys`);
  }
});

t.test('markets: bl only and always on ball-by-ball, as a number', async (t) => {
  for (const m of await allMarkets()) {
    if (m.ty === 'ball-by-ball') t.type(m.bl, 'number', `${m.mid} has bl`);
    else t.notOk('bl' in m, `${m.mid} (${m.ty}) has no bl`);
  }
});

t.test('markets: player-race carries runners in nested m, never r', async (t) => {
  const races = (await allMarkets()).filter((m) => m.ty === 'player-race');
  t.ok(races.length > 0);
  for (const m of races) {
    t.notOk('r' in m);
    const nested = m.m as Obj[];
    t.ok(nested.length > 0);
    for (const n of nested) {
      t.same(Object.keys(n).sort(), ['go', 'if', 'mid', 'r', 's']);
      t.ok((n.r as Obj[]).every((r) => typeof r.rid === 'number' && typeof r.na === 'string'));
    }
  }
});

t.test('markets: m only on player-race; r on match-odd and bookmaker markets', async (t) => {
  for (const m of await allMarkets()) {
    if (m.ty !== 'player-race') t.notOk('m' in m, `${m.mid} has no m`);
    if (m.ty === 'match-odd' || m.ty === 'bookmaker') {
      t.ok(Array.isArray(m.r) && (m.r as Obj[]).length > 0, `${m.mid} has runners`);
      for (const r of m.r as Obj[]) t.same(Object.keys(r), ['rid', 'na']);
    }
  }
});

t.test('markets: di on session markets, as an integer', async (t) => {
  const sessions = (await allMarkets()).filter((m) => m.ty === 'session');
  t.ok(sessions.length > 0);
  for (const m of sessions) t.ok(Number.isInteger(m.di), `${m.mid} has di`);
});

t.test('markets: ordered by display ID (none first), then market ID', async (t) => {
  const r = await get<{ data: Record<string, Obj[]> }>('/api/v1/events/markets?eid=30000001');
  const keys = r.body.data['30000001'].map((m) => [(m.di as number | undefined) ?? -1, m.mid as string] as const);
  const sorted = [...keys].sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  t.same(keys, sorted);
});

t.test('markets: unknown events map to [], duplicates collapse, order of keys follows the request', async (t) => {
  const r = await get<{ data: Record<string, Obj[]> }>('/api/v1/events/markets?eid=424242,30000001,424242');
  t.equal(r.status, 200);
  t.same(Object.keys(r.body.data).sort(), ['30000001', '424242']);
  t.same(r.body.data['424242'], []);
});

t.test('results: one element per known market with mid, mt, res, rt, ia; unknown ones left out', async (t) => {
  const r = await get<Obj[]>('/api/v1/markets/result?mid=1.200005001,no.such.market,1.200003001');
  t.equal(r.status, 200);
  t.equal(r.body.length, 2);
  for (const res of r.body) {
    t.same(Object.keys(res), ['mid', 'mt', 'res', 'rt', 'ia']);
    t.type(res.res, 'string');
  }
  t.same(r.body.map((x) => x.mid), ['1.200005001', '1.200003001']);
});

t.test('results: a recalled result shows rt true, an abandoned one ia true', async (t) => {
  const r = await get<Obj[]>('/api/v1/markets/result?mid=1.200005001,1.200003001');
  const [recalled, abandoned] = r.body;
  t.equal(recalled.rt, true);
  t.equal(abandoned.ia, true);
});

t.test('results: a known market with no result answers res "", rt false, ia false', async (t) => {
  const c = await sqlClient(t, svc.databaseUrl);
  const { rows } = await c.query<{ mid: string; ty: string }>(
    `SELECT mid, ty FROM markets m WHERE parent_mid IS NULL AND NOT EXISTS (SELECT 1 FROM results r WHERE r.mid = m.mid) LIMIT 1`);
  const r = await get<Obj[]>(`/api/v1/markets/result?mid=${rows[0].mid}`);
  t.same(r.body, [{ mid: rows[0].mid, mt: rows[0].ty, res: '', rt: false, ia: false }]);
});

t.test('results: the market type of a nested player-race market is its parent\'s', async (t) => {
  const c = await sqlClient(t, svc.databaseUrl);
  const { rows } = await c.query<{ mid: string }>('SELECT mid FROM markets WHERE parent_mid IS NOT NULL LIMIT 1');
  const r = await get<Obj[]>(`/api/v1/markets/result?mid=${rows[0].mid}`);
  t.equal(r.body[0].mt, 'player-race');
});

t.test('unsubscribe: status 1 and "Unsubscribed from market" with the comma-joined IDs', async (t) => {
  const r = await postJson(svc.url, '/api/v1/unsubscribe', { data: ['1.200001001', '1.200001002'] });
  t.equal(r.status, 200);
  t.same(r.body, { status: 1, message: 'Unsubscribed from market 1.200001001,1.200001002' });
});

t.test('subscribe: status 1 and "Subscribed from market ..."; the set is stored for the caller', async (t) => {
  const r = await postJson(svc.url, '/api/v1/subscribe', { data: ['9.1', '9.2', '9.1'] });
  t.same(r.body, { status: 1, message: 'Subscribed from market 9.1,9.2' });
  const c = await sqlClient(t, svc.databaseUrl);
  const stored = await c.query(`SELECT mid FROM client_markets WHERE client_id = 'public' AND mid LIKE '9.%' ORDER BY mid`);
  t.same(stored.rows.map((x) => x.mid), ['9.1', '9.2']);
  await postJson(svc.url, '/api/v1/unsubscribe', { data: ['9.1'] });
  const after = await c.query(`SELECT mid FROM client_markets WHERE client_id = 'public' AND mid LIKE '9.%' ORDER BY mid`);
  t.same(after.rows.map((x) => x.mid), ['9.2']);
});

t.test('unsubscribe is idempotent', async (t) => {
  const a = await postJson(svc.url, '/api/v1/unsubscribe', { data: ['8.8'] });
  const b = await postJson(svc.url, '/api/v1/unsubscribe', { data: ['8.8'] });
  t.same(a.body, b.body);
  t.equal(b.status, 200);
});

t.test('a repeated lookup answers the same, and a change shows on the very next one', async (t) => {
  const path = '/api/v1/events/markets?eid=30000001';
  const first = await get(path);
  t.equal((await get(path)).text, first.text, 'same answer twice');
  const c = await sqlClient(t, svc.databaseUrl);
  await c.query(`UPDATE markets SET na = 'Match Odds (cached?)' WHERE mid = '1.200001001'`);
  const changed = await eventually(() => get(path), (r) => r.text.includes('cached?'), 10000, 10);
  t.match(changed.text, 'cached?', 'the change is served once the read model has it');
});
