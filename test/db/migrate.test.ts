import t from 'tap';
import pg from 'pg';
import { readdir } from 'node:fs/promises';
import { migrate } from '../../src/db/migrate.js';
import { createLogger } from '../../src/log.js';
import { freshDatabase, sqlClient } from '../helpers/db.js';

const log = createLogger('error', false, () => undefined);

/**
 * The test's database is dropped WITH (FORCE) at teardown, which kills any connection still
 * closing; what that says to the pool is no concern of these tests, whose queries answer for them.
 */
function openPool(url: string, max?: number): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on('error', () => undefined);
  return pool;
}
const files = (await readdir(new URL('../../../sql/', import.meta.url))).filter((f) => f.endsWith('.sql')).sort();

t.test('pods migrating one database at once apply each file exactly once', async (t) => {
  const url = await freshDatabase(t);
  const pools = [0, 1, 2].map(() => openPool(url, 2));
  const applied = await Promise.all(pools.map((p) => migrate(p, log)));
  // Ended here, not in a teardown: the database is dropped WITH (FORCE) at teardown, and a pool
  // still holding an idle connection then would see it killed and throw.
  await Promise.all(pools.map((p) => p.end()));
  t.same(applied.flat().sort(), files, 'every file applied once in all');
  const c = await sqlClient(t, url);
  const { rows } = await c.query('SELECT name FROM schema_migrations ORDER BY name');
  t.same(rows.map((r) => r.name), files);
});

t.test('running the migrations again applies nothing', async (t) => {
  const url = await freshDatabase(t);
  const pool = openPool(url);
  await migrate(pool, log);
  const again = await migrate(pool, log);
  await pool.end();
  t.same(again, []);
});

t.test('the schema rejects impossible data', async (t) => {
  const url = await freshDatabase(t);
  const pool = openPool(url);
  await migrate(pool, log);
  await pool.query(`INSERT INTO sports (si, na) VALUES (4, 'Cricket')`);
  await pool.query(`INSERT INTO leagues (li, si, na) VALUES (1, 4, 'L')`);
  await pool.query(`INSERT INTO events (eid, si, li, na, st) VALUES (1, 4, 1, 'E', now())`);
  await t.rejects(pool.query(`INSERT INTO markets (mid, eid, na, ty) VALUES ('1.1', 1, 'M', 'no-such-type')`), /markets_ty_check/, 'market type outside the list');
  await t.rejects(pool.query(`INSERT INTO runners (mid, rid, pos, na) VALUES ('9.9', 1, 0, 'R')`), /foreign key/, 'runner without a market');
  await t.rejects(pool.query(`INSERT INTO markets (mid, eid, na, ty, bl) VALUES ('1.2', 1, 'M', 'session', 4.1)`), /check/, 'bl on a market that is not ball-by-ball');
  await t.rejects(pool.query(`INSERT INTO markets (mid, eid, na, ty) VALUES ('bad id', 1, 'M', 'session')`), /check/, 'malformed market ID');
  await t.rejects(pool.query(`INSERT INTO events (eid, si, li, na, st) VALUES (2, 5, 1, 'E', now())`), /foreign key/, 'event of an unknown sport');
  await pool.end();
});
