import t, { type Test } from 'tap';
import pg from 'pg';
import { freshDatabase } from '../helpers/db.js';
import { migrate } from '../../src/db/migrate.js';
import { LISTENER_NAME } from '../../src/db/listen.js';
import { KEY_APPLIED, changeKey } from '../../src/auth/key-change.js';
import { createKey } from '../../src/auth/keys.js';
import { createLogger } from '../../src/log.js';

/**
 * A key command waits for the running services to confirm its change, over a
 * real Postgres. The services are played by LISTEN connections named as the
 * service names its own, each confirming from its own connection, or never.
 */
const url = await freshDatabase(t);
const pool = new pg.Pool({ connectionString: url });
t.teardown(() => pool.end());
await migrate(pool, createLogger('error', false, () => undefined));

interface FakeService {
  conn: pg.Client;
  /** Key IDs it confirmed. */
  confirmed: string[];
}

/** A service that confirms each key change `afterMs` after its NOTIFY, or never (undefined). */
async function service(t: Test, afterMs?: number): Promise<FakeService> {
  const conn = new pg.Client({ connectionString: url, application_name: LISTENER_NAME });
  await conn.connect();
  t.teardown(() => conn.end().catch(() => undefined));
  const s: FakeService = { conn, confirmed: [] };
  conn.on('notification', (n) => {
    if (afterMs === undefined || !n.payload?.startsWith('key:')) return;
    const id = n.payload.slice(4);
    // Counted as it is sent: the command may hear it (and return) before this client has read its own answer.
    setTimeout(() => {
      s.confirmed.push(id);
      void conn.query('SELECT pg_notify($1, $2)', [KEY_APPLIED, id]).catch(() => undefined);
    }, afterMs);
  });
  await conn.query('LISTEN refdata');
  return s;
}

const create = (bound: number) => changeKey(pool, (db) => createKey(db, 'x', 'subscriber'), (k) => k.id, bound);

t.test('a key change returns once every running service has confirmed it', async (t) => {
  const services = [await service(t, 20), await service(t, 200)];
  const { result, unconfirmed } = await create(10_000);
  t.equal(unconfirmed, 0);
  for (const s of services) t.same(s.confirmed, [result.id], 'each service confirmed before the command returned');
});

t.test('a service that never confirms ends the wait at its bound, counted; one that goes away is waited for no more', async (t) => {
  const silent = await service(t);
  t.equal((await create(300)).unconfirmed, 1);
  await silent.conn.end();
  const leaving = await service(t);
  // Gone while the change waits for it: at the change's NOTIFY.
  leaving.conn.on('notification', () => void leaving.conn.end());
  const gone = changeKey(pool, (db) => createKey(db, 'x', 'subscriber'), (k) => k.id, 20_000);
  t.equal((await gone).unconfirmed, 0, 'returned once it left, long before the bound');
});

t.test('the connection to Postgres cut while a key command runs: the command fails with why, the process lives, and the pool hands out a working connection after', async (t) => {
  const failed = await changeKey(pool, async (db) => {
    // As a cut network leaves it: the socket closed, with no word from Postgres first.
    (db as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    return db.query('SELECT pg_sleep(30)');
  }, () => 'never', 5000).then(() => undefined, (err: Error) => err);
  t.match(failed?.message, /terminated/i, 'the command fails, saying the connection ended');
  const { rows: [{ one }] } = await pool.query<{ one: number }>('SELECT 1 AS one');
  t.equal(one, 1, 'the pool\'s next connection works: the lost one was not handed out again');
});
