import t from 'tap';
import { eventually } from '../helpers/wait.js';
import { adminUrl, sqlClient } from '../helpers/db.js';
import { http, startTestService } from '../helpers/service.js';
import { Client } from '../helpers/ws.js';
import { LISTENER_NAME } from '../../src/db/listen.js';

/**
 * Notifications sent while the LISTEN connection is away are lost; the
 * reload that follows its return must tell sockets exactly what a targeted
 * refresh would have.
 */
const SUSPENDED = '1.200001001';
const SETTLED = '1.200001002';
/** Only its terms change, which no REST answer shows: the reload must still see it. */
const TERMS_ONLY = '1.200001003';

t.test('changes committed while the listener was away reach REST and every socket once it is back', async (t) => {
  const svc = await startTestService(t);
  const dbName = new URL(svc.databaseUrl).pathname.slice(1);
  const sql = await sqlClient(t, svc.databaseUrl);
  const admin = await sqlClient(t, adminUrl());
  const c = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [SUSPENDED, SETTLED, TERMS_ONLY] });
  const from = c.frames.length;

  // No new connection may reach the database, so the listener stays away while the changes commit.
  await admin.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS false`);
  t.teardown(() => admin.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS true`));
  const { rows } = await sql.query<{ n: number }>('SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = $2', [dbName, LISTENER_NAME]);
  t.equal(rows[0].n, 1, 'the listener\'s backend terminated');
  await eventually(async () => (await sql.query('SELECT 1 FROM pg_stat_activity WHERE datname = $1 AND application_name = $2', [dbName, LISTENER_NAME])).rowCount, (n) => n === 0);
  await sql.query(`UPDATE markets SET s = false WHERE mid = '${SUSPENDED}'`);
  await sql.query(`INSERT INTO market_terms (mid, bd) VALUES ('${SUSPENDED}', 7), ('${TERMS_ONLY}', 3) ON CONFLICT (mid) DO UPDATE SET bd = EXCLUDED.bd`);
  await sql.query(`INSERT INTO results (mid, res) VALUES ('${SETTLED}', '101') ON CONFLICT (mid) DO UPDATE SET res = '101'`);
  await sql.query(`UPDATE markets SET go = true WHERE mid = '${SETTLED}'`);
  await c.settled();
  t.same(c.frames.slice(from).filter((f) => f.op !== 'ack'), [], 'nothing told while the listener is away');
  t.notOk(svc.model.concluded(SETTLED), 'nor known here: the read model has not seen the market concluded');
  await admin.query(`ALTER DATABASE ${dbName} ALLOW_CONNECTIONS true`);

  const state = await c.next((f) => f.op === 'market' && f.mid === SUSPENDED, 15000, from);
  t.match(state, { op: 'market', mid: SUSPENDED, s: false, go: false, rt: false, terms: { bd: 7 } }, 'the state and the terms, which REST does not show: the reload compares both');
  t.match(await c.next((f) => f.op === 'market' && f.mid === TERMS_ONLY, 5000, from), { terms: { bd: 3 } }, 'a change of terms alone is a change');
  t.same(await c.next((f) => f.op === 'result' && f.mid === SETTLED, 5000, from), { op: 'result', mid: SETTLED, mt: 'bookmaker', res: '101', rt: false, ia: false });
  t.same(await c.next((f) => f.op === 'unsubscribed', 5000, from), { op: 'unsubscribed', mids: [SETTLED] }, 'and the concluded market is detached');
  const r = await http<{ data: Record<string, { mid: string; s: boolean }[]> }>(svc.url, '/api/v1/events/markets?eid=30000001');
  t.equal(r.body.data['30000001'].find((m) => m.mid === SUSPENDED)!.s, false, 'REST shows it too');
});
