import t from 'tap';
import WebSocket from 'ws';
import { createKey } from '../../src/auth/keys.js';
import { CLOSE } from '../../src/errors.js';
import { sqlClient } from '../helpers/db.js';
import { http, startTestService } from '../helpers/service.js';
import { Client } from '../helpers/ws.js';
import { captureErrorLogs, eventually } from './lib.js';

/**
 * A key is revoked, and the reload its NOTIFY starts fails: the api_keys
 * table is locked by another transaction, so the reload's SELECT runs into
 * the statement timeout. Once the lock is gone the key must be refused within
 * seconds and its socket closed with 4003: the failed reload was retried, so
 * a revoked key does not keep working because Postgres blinked.
 */
const STATEMENT_TIMEOUT_MS = 1000;
const errorLogs = captureErrorLogs(t);
const svc = await startTestService(t, { AUTH: 'on', REST_RATE_LIMIT: '1000', PG_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS) });
const key = await createKey(svc.pool, 'carol', 'subscriber');
const sports = () => http(svc.url, '/api/v1/sports', { headers: { 'x-api-key': key.token } });

/** The status a /ws handshake with the key is answered with (101 when it opens). */
function handshake(token: string): Promise<number> {
  const ws = new WebSocket(svc.url.replace(/^http/, 'ws') + '/ws', { headers: { 'x-api-key': token } });
  ws.on('error', () => undefined);
  return new Promise((ok) => {
    ws.once('open', () => {
      ws.close();
      ok(101);
    });
    ws.once('unexpected-response', (req, res) => {
      ok(res.statusCode ?? 0);
      req.destroy(); // ws leaves the connection open once this event has a listener
    });
  });
}

/** The service's blocked reads of api_keys, as Postgres sees them: one row per attempt. */
interface Attempt { pid: number; started: string }

t.test('revoked while a lock makes the reload fail: retried, the key is refused within seconds and its socket closed with 4003', async (t) => {
  // A key made through the pool is live once its NOTIFY has been applied.
  t.equal((await eventually(sports, (r) => r.status === 200)).status, 200, 'the new key works over REST');
  const socket = await Client.connect(svc.url, { query: `key=${key.token}` });
  t.teardown(() => socket.close());
  let closedWith: { code: number; reason: string } | undefined;
  void socket.closed.then((c) => (closedWith = c));
  t.equal((await socket.request({ op: 'ping' })).status, 1, 'and on a socket');
  const revoker = await sqlClient(t, svc.databaseUrl);
  const locker = await sqlClient(t, svc.databaseUrl);
  const observer = await sqlClient(t, svc.databaseUrl);
  const lockerPid = (await locker.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;

  // The lock request queues behind the revoking UPDATE's row lock, so it is granted the moment the
  // revocation commits: before the NOTIFY reaches the service and its reload can read the table.
  await revoker.query('BEGIN');
  await revoker.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [key.id]);
  await locker.query('BEGIN');
  const locked = locker.query('LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE');
  const queued = await eventually(() => observer.query('SELECT count(*)::int AS n FROM pg_locks WHERE pid = $1 AND NOT granted', [lockerPid]), (r) => r.rows[0].n > 0);
  t.equal(queued.rows[0].n, 1, 'the lock request is queued behind the revocation');
  await revoker.query('COMMIT');
  await locked;

  // Two attempts blocked on the lock (each ended by the statement timeout) show the reload failing and being tried again.
  const attempts = new Map<string, Attempt>();
  await eventually(async () => {
    const { rows } = await observer.query<Attempt>(
      `SELECT pid, query_start::text AS started FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'odds-service' AND wait_event_type = 'Lock' AND query LIKE '%FROM api_keys%'`,
    );
    for (const a of rows) attempts.set(`${a.pid}@${a.started}`, a);
    return attempts.size;
  }, (n) => n >= 2, 10 * STATEMENT_TIMEOUT_MS, 50);
  t.ok(attempts.size >= 2, `the reload was attempted ${attempts.size} times while the table was locked`);
  const releasedAt = Date.now();
  await locker.query('COMMIT');

  const refused = await eventually(sports, (r) => r.status === 401, 10000, 50);
  t.equal(refused.status, 401, `refused ${Date.now() - releasedAt} ms after the lock was released`);
  t.same(refused.body, { status: 0, message: 'the API key is not valid or was revoked' });
  const closed = await eventually(async () => closedWith, (c) => c !== undefined);
  t.same(closed, CLOSE.REVOKED, 'the open socket was closed with 4003');
  t.equal(await handshake(key.token), 401, 'a new socket with the key is refused');
});

t.test('nothing was logged as an error', async (t) => {
  t.same(errorLogs, []);
});
