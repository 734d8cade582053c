import t from 'tap';
import { http, startTestService } from '../helpers/service.js';
import { sqlClient } from '../helpers/db.js';

/**
 * The REST bodies, byte for byte, against what Postgres holds: each element
 * written here from its rows with the contract's keys in the contract's order
 * and its presence rules (docs/rest.md), independently of how the service
 * names things inside. A changed key, order, or number format fails here.
 */
type Row = Record<string, unknown>;
const svc = await startTestService(t);
const db = await sqlClient(t, svc.databaseUrl);
const text = async (path: string): Promise<string> => {
  const r = await http(svc.url, path);
  t.equal(r.status, 200, path);
  return r.text;
};
const rows = async (sql: string, params: unknown[] = []): Promise<Row[]> => (await db.query(sql, params)).rows as Row[];
const chunks = <T>(list: T[]): T[][] => Array.from({ length: Math.ceil(list.length / 50) }, (_, i) => list.slice(50 * i, 50 * i + 50));

const runners = (mid: unknown) => rows('SELECT rid, na FROM runners WHERE mid = $1 ORDER BY pos', [mid]).then((r) => r.map((x) => ({ rid: Number(x.rid), na: x.na })));

async function market(m: Row): Promise<Row> {
  const out: Row = { mid: m.mid, eid: Number(m.eid), na: m.na, si: Number(m.si), s: m.s, go: m.go, ty: m.ty, rt: m.rt };
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
  const order = (a: Row, b: Row) => ((a.di as number | undefined) ?? -1) - ((b.di as number | undefined) ?? -1) || (a.mid! < b.mid! ? -1 : a.mid! > b.mid! ? 1 : 0);
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
