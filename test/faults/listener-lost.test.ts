import t, { type Test } from 'tap';
import type pg from 'pg';
import { adminUrl, sqlClient } from '../helpers/db.js';
import { scrape, value } from '../helpers/metrics.js';
import { http, startTestService } from '../helpers/service.js';
import { Client } from '../helpers/ws.js';
import type { ServerMessage } from '../../src/odds/messages.js';
import { captureErrorLogs, eventually } from './lib.js';

/**
 * The LISTEN connection lost while reference changes commit: its backend
 * terminated (pg_terminate_backend), or frozen with SIGSTOP so the connection
 * is half-open and only the periodic ping can tell. The NOTIFYs of those
 * changes never reach the service; it must find out by itself, reload, show
 * the changes in REST and send subscribers their `market`, `result` and
 * `unsubscribed` frames.
 */
const errorLogs = captureErrorLogs(t);
const svc = await startTestService(t, { PG_LISTEN_PING_MS: '300' });
const db = await sqlClient(t, svc.databaseUrl);
const dbName = new URL(svc.databaseUrl).pathname.slice(1);

const EVENT = 30000001;
// Open demo markets of one event, none with a result yet.
const [A, B, C, D, E] = ['1.200001004', '1.200001005', '1.200001006', '1.200001007', '1.200001009'];

const sub = await Client.connect(svc.url);
t.teardown(() => sub.close());
const ack = await sub.request({ op: 'subscribe', mids: [A, B, C, D, E] });
if (ack.status !== 1) throw new Error(ack.message);

const listenerPids = async (): Promise<number[]> =>
  (await db.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'odds-service-listen'`)).rows.map((r) => r.pid as number);
const lost = async () => value(await scrape(svc.url), 'odds_pg_errors_total', 'kind="listener_lost"');
const marketsOf = async () => (await http<{ data: Record<string, { mid: string; s: boolean; go: boolean }[]> }>(svc.url, `/api/v1/events/markets?eid=${EVENT}`)).body.data[String(EVENT)];
const resultOf = async (mid: string) => (await http<{ res: string }[]>(svc.url, `/api/v1/markets/result?mid=${mid}`)).body[0]?.res;

/** Commits, in one transaction, a market's state change, a new result and a concluded market. */
async function commitChanges(c: pg.Client, toggle: string, settle: string, res: string, conclude: string): Promise<void> {
  await c.query('BEGIN');
  await c.query('UPDATE markets SET s = NOT s WHERE mid = $1', [toggle]);
  await c.query(`INSERT INTO results (mid, res) VALUES ($1, $2) ON CONFLICT (mid) DO UPDATE SET res = EXCLUDED.res`, [settle, res]);
  await c.query('UPDATE markets SET go = true, s = false WHERE mid = $1', [conclude]);
  await c.query('COMMIT');
}

/** The frames a subscriber must get for commitChanges(A-ish, B-ish, ...), from the cursor on. */
async function expectFrames(t: Test, from: number, toggle: string, s: boolean, settle: string, mt: string, res: string, conclude: string): Promise<void> {
  const after = (match: (f: ServerMessage) => boolean) => sub.next(match, 10000, from);
  t.match(await after((f) => f.op === 'market' && f.mid === toggle), { op: 'market', mid: toggle, s, go: false, rt: false }, `market frame of ${toggle}`);
  t.same(await after((f) => f.op === 'result' && f.mid === settle), { op: 'result', mid: settle, mt, res, rt: false, ia: false }, `result frame of ${settle}`);
  t.match(await after((f) => f.op === 'market' && f.mid === conclude), { op: 'market', mid: conclude, s: false, go: true, rt: false }, `market frame of ${conclude}`);
  t.same(await after((f) => f.op === 'unsubscribed'), { op: 'unsubscribed', mids: [conclude] }, `${conclude} concluded: unsubscribed`);
}

t.test('the listener\'s backend terminated, changes committed before it could reconnect: reloaded, REST and frames show them', async (t) => {
  const [pid] = await listenerPids();
  t.ok(pid, 'the listener\'s connection is in pg_stat_activity');
  const lostBefore = await lost();
  const from = sub.frames.length;
  // No new connection to the database while the changes commit, so the listener cannot be back in time to hear them.
  // (From another database: Postgres will not take that from a session of this one.)
  const admin = await sqlClient(t, adminUrl());
  await admin.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS false`);
  try {
    await db.query('SELECT pg_terminate_backend($1)', [pid]);
    await eventually(listenerPids, (pids) => pids.length === 0);
    await eventually(lost, (n) => n > lostBefore);
    await commitChanges(db, A, B, '1', C);
    t.same(await listenerPids(), [], 'the changes committed while no listener was connected');
  } finally {
    await admin.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS true`);
  }
  t.equal(await lost(), lostBefore + 1, 'the loss was counted');
  await expectFrames(t, from, A, false, B, 'tied-match', '1', C);
  const markets = await eventually(marketsOf, (ms) => ms.find((m) => m.mid === A)?.s === false);
  t.same(markets.filter((m) => [A, C].includes(m.mid)).map(({ mid, s, go }) => ({ mid, s, go })), [{ mid: A, s: false, go: false }, { mid: C, s: false, go: true }], 'REST shows the new states');
  t.equal(await resultOf(B), '1', 'REST shows the new result');
  t.equal((await listenerPids()).length, 1, 'one listener again');
});

t.test('the listener\'s backend frozen (half-open connection): the ping finds it, the service reconnects, reloads, and REST and frames show the changes', async (t) => {
  const [pid] = await listenerPids();
  const lostBefore = await lost();
  const from = sub.frames.length;
  process.kill(pid, 'SIGSTOP');
  t.teardown(() => {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // already gone
    }
  });
  // Its NOTIFY goes to the frozen backend, which will never pass it on.
  await commitChanges(db, A, B, '2', D);
  await expectFrames(t, from, A, true, B, 'tied-match', '2', D);
  t.equal(await lost(), lostBefore + 1, 'the loss was counted');
  const pids = await listenerPids();
  t.ok(pids.some((p) => p !== pid), 'a new listener connection');
  const markets = await eventually(marketsOf, (ms) => ms.find((m) => m.mid === A)?.s === true);
  t.same(markets.filter((m) => [A, D].includes(m.mid)).map(({ mid, s, go }) => ({ mid, s, go })), [{ mid: A, s: true, go: false }, { mid: D, s: false, go: true }], 'REST shows the new states');
  t.equal(await resultOf(B), '2', 'REST shows the new result');
});

t.test('once back, a change reaches the subscriber through NOTIFY as before', async (t) => {
  const from = sub.frames.length;
  await db.query('UPDATE markets SET s = false WHERE mid = $1', [E]);
  t.match(await sub.next((f) => f.op === 'market' && f.mid === E, 5000, from), { op: 'market', mid: E, s: false, go: false, rt: false });
});

t.test('nothing was logged as an error', async (t) => {
  t.same(errorLogs, []);
});
