/**
 * Paging the sockets opened in a range (GET /api/v1/record/sockets), against a real Postgres
 * written by the real recorder: a page's `next` names the last socket listed (its opening time and
 * name), and the next page starts strictly after it, so hundreds of sockets opened in one ms,
 * cut by page after page, are listed each once, in order. The answer stays an array; the next
 * page is in its `Link` header. A cursor that is not one, or lies outside the range, is refused.
 */
import t, { type Test } from 'tap';
import { migratedDatabase } from '../helpers/db.js';
import { testRecord } from '../helpers/record.js';
import { http, startTestService, type Reply } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';
import { loadChecker } from '../docs/schema.js';
import { SocketRecord } from '../../src/record/sockets.js';
import { RecordSnapshots } from '../../src/record/snapshot.js';

const url = await migratedDatabase(t);
const { log, pool } = await testRecord(t, url);
const snapshots = new RecordSnapshots(pool);
const api = await loadChecker();

const T = Date.now() - 60_000;
let n = 0;
const open = (conn: string, at: number, key = 'acme') => log.append({
  kind: 'note', note: { topic: 'ledger', src: conn.slice(0, conn.indexOf('.')), n: ++n, at, body: { conn, op: 'open', key, client: 'c', address: '127.0.0.1', format: 'json', hb: 5000 } },
});
// Two before, 250 opened in the one ms T+5 on two pods (names whose text order is not their numbers'), three after, one of another key.
open('pzz.1', T);
open('paa.1', T + 1);
for (let i = 1; i <= 200; i++) open(`pab.${i}`, T + 5);
for (let i = 1; i <= 50; i++) open(`p9.${i}`, T + 5, i % 2 ? 'acme' : 'other');
open('pab.900', T + 6);
open('pab.901', T + 7, 'other');
open('pab.902', T + 9);
const TOTAL = 255;
await waitFor(async () => Number((await pool.query<{ n: number }>(`SELECT count(*) AS n FROM record_ledger WHERE op = 'open'`)).rows[0].n) === TOTAL, `${TOTAL} sockets recorded`);
const svc = await startTestService(t, { RECORD: 'on', DEMO_DATA: 'off' }, url);

const list = (limit: number, after?: string, key?: string, from = T, to = T + 100) => snapshots.read((db) => {
  const [at, ...conn] = after?.split('.') ?? [];
  return new SocketRecord(db).list(from, to, key, limit, after ? { at: Number(at), conn: conn.join('.') } : undefined);
});

async function pagedBy(t: Test, limit: number, key?: string): Promise<string[]> {
  const seen: string[] = [];
  let after: string | undefined;
  for (let i = 0; i < 1000; i++) {
    const page = await list(limit, after, key);
    t.ok(page.sockets.length <= limit);
    seen.push(...page.sockets.map((s) => s.conn));
    if (!page.next) return seen;
    after = page.next;
  }
  throw new Error('the pages never ended');
}

t.test('pages cut through the sockets of one ms: each listed once, in the order of the whole', async (t) => {
  const whole = await list(1000);
  t.equal(whole.sockets.length, TOTAL);
  t.equal(whole.next, null, 'one page holds the range: no next');
  const order = whole.sockets.map((s) => s.conn);
  for (const limit of [1, 7, 100, 254]) t.same(await pagedBy(t, limit), order, `pages of ${limit}`);
  const acme = (await list(1000, undefined, 'acme')).sockets.map((s) => s.conn);
  t.equal(acme.length, TOTAL - 26, 'by key');
  t.same(await pagedBy(t, 9, 'acme'), acme, 'by key, pages of 9');
  const exact = await list(TOTAL);
  t.equal(exact.next, null, 'a page ending on the range\'s last socket has no next');
});

t.test('the route: the answer an array as before, the next page in its Link header', async (t) => {
  const first = await http<{ conn: string }[]>(svc.url, `/api/v1/record/sockets?from=${T}&to=${T + 100}`);
  t.equal(first.status, 200);
  t.equal(first.body.length, 100, 'the default limit');
  const whole = (await http<{ conn: string }[]>(svc.url, `/api/v1/record/sockets?from=${T}&to=${T + 100}&limit=1000`));
  t.equal(whole.headers.get('link'), null, 'no Link when the range is done');
  api.check(t, 'GET', '/api/v1/record/sockets', whole);
  const seen: string[] = [];
  let path: string | undefined = `/api/v1/record/sockets?from=${T}&to=${T + 100}&limit=60`;
  let last: Reply<{ conn: string }[]> | undefined;
  for (let i = 0; path && i < 20; i++) {
    last = await http<{ conn: string }[]>(svc.url, path);
    t.equal(last.status, 200, path);
    api.check(t, 'GET', '/api/v1/record/sockets', last);
    seen.push(...last.body.map((s) => s.conn));
    path = /^<([^>]+)>; rel="next"$/.exec(last.headers.get('link') ?? '')?.[1];
  }
  t.same(seen, whole.body.map((s) => s.conn), 'followed Links list each socket once, in order');
  t.equal(last!.body.length, TOTAL % 60, 'the last page holds the rest');
  const link = first.headers.get('link');
  t.match(link, `from=${T}&to=${T + 100}&limit=100&after=${T + 5}.`, 'the range, limit and cursor: the last socket listed');
  const defaulted = await http(svc.url, `/api/v1/record/sockets?from=${T}&key=acme&limit=2`);
  t.match(defaulted.headers.get('link'), /^<\/api\/v1\/record\/sockets\?from=\d+&to=\d+&key=acme&limit=2&after=\d+\.p[0-9a-z]+\.\d+>; rel="next"$/, 'the `to` it defaulted to, fixed, and the key');
});

t.test('a cursor that is not a page\'s next, or lies outside the range, is refused with a reason', async (t) => {
  for (const [after, why] of [
    ['x', /after must be the next of the page before/], [`${T}`, /after must be the next/], [`${T}.5`, /after must be the next/],
    [`${T}.pab`, /after must be the next/], [`${T}.PAB.1`, /after must be the next/], [`${T + 5}.pab.1.2`, /after must be the next/],
    [`${T - 1}.pab.1`, /same range/], [`${T + 101}.pab.1`, /same range/],
  ] as const) {
    const r = await http<{ message: string }>(svc.url, `/api/v1/record/sockets?from=${T}&to=${T + 100}&after=${encodeURIComponent(after)}`);
    t.equal(r.status, 400, after);
    t.match(r.body.message, why, after);
    api.check(t, 'GET', '/api/v1/record/sockets', r);
  }
});

t.test('with its end left out, a listing is what the record holds complete now: a socket opened just now is listed once the complete mark passes it', async (t) => {
  const X = Date.now();
  open('pnew.1', X);
  await waitFor(async () => Number((await pool.query<{ n: number }>(`SELECT count(*) AS n FROM record_ledger WHERE op = 'open'`)).rows[0].n) === TOTAL + 1, 'the new socket recorded');
  const mark = async () => Number((await pool.query<{ at: string }>('SELECT at FROM record_complete')).rows[0]?.at ?? 0);
  const listed = async () => (await http<{ conn: string }[]>(svc.url, `/api/v1/record/sockets?from=${T}&limit=1000`)).body.map((s) => s.conn);
  if ((await mark()) < X) t.notOk((await listed()).includes('pnew.1'), 'not listed while the mark is before it: a socket opened before it may still be committed');
  await waitFor(async () => (await mark()) >= X, 'the complete mark past the new socket');
  const all = await listed();
  t.ok(all.includes('pnew.1'), 'listed once the mark passes it');
  t.equal(all.length, TOTAL + 1, 'with every socket before it');
  const link = (await http(svc.url, `/api/v1/record/sockets?from=${T}&limit=2`)).headers.get('link');
  const to = Number(/&to=(\d+)&/.exec(link ?? '')?.[1]);
  t.ok(to >= X && to <= (await mark()), `the pages after keep the listing's end, the mark then (${to})`);
});
