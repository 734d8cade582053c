import t from 'tap';
import pg from 'pg';
import { createLogger } from '../../src/log.js';
import { ReadModel } from '../../src/refdata/model.js';
import { ModelSync } from '../../src/refdata/sync.js';
import { eventually, waitFor } from '../helpers/wait.js';
import { http, startTestService } from '../helpers/service.js';
import { sqlClient } from '../helpers/db.js';

type Obj = Record<string, unknown>;
const svc = await startTestService(t);


t.test('a sport renamed through SQL shows up in the next reads', async (t) => {
  const c = await sqlClient(t, svc.databaseUrl);
  await c.query(`UPDATE sports SET na = 'Cricket (renamed)' WHERE si = 4`);
  const r = await eventually(() => http<Obj[]>(svc.url, '/api/v1/sports'), (r) => r.body.some((s) => s.na === 'Cricket (renamed)'));
  t.ok(r.body.some((s) => s.si === 4 && s.na === 'Cricket (renamed)'));
});

t.test('an event inserted through SQL appears under its sport, in start order', async (t) => {
  const c = await sqlClient(t, svc.databaseUrl);
  await c.query(`INSERT INTO events (eid, si, li, na, st) VALUES (77000001, 4, 4001, 'Late Entry', '2000-01-01T00:00:00Z')`);
  const r = await eventually(() => http<{ data: Record<string, Obj[]> }>(svc.url, '/api/v1/sports/events?si=4'),
    (r) => r.body.data['4'].some((e) => e.eid === 77000001));
  t.equal(r.body.data['4'][0].eid, 77000001, 'earliest start comes first');
  t.equal(r.body.data['4'][0].le, 'ICC T20 World Cup', 'league name joined in');
});

t.test('a league renamed through SQL changes le on its events', async (t) => {
  const c = await sqlClient(t, svc.databaseUrl);
  await c.query(`UPDATE leagues SET na = 'World Cup (renamed)' WHERE li = 4001`);
  const r = await eventually(() => http<{ data: Record<string, Obj[]> }>(svc.url, '/api/v1/sports/events?si=4&li=4001'),
    (r) => r.body.data['4'].every((e) => e.le === 'World Cup (renamed)'));
  t.ok(r.body.data['4'].length > 0);
  t.ok(r.body.data['4'].every((e) => e.le === 'World Cup (renamed)'));
});

t.test('a market state change and a runner change through SQL show up in the market list', async (t) => {
  const c = await sqlClient(t, svc.databaseUrl);
  await c.query(`UPDATE markets SET s = false WHERE mid = '1.200001001'`);
  await c.query(`UPDATE runners SET na = 'India (A)' WHERE mid = '1.200001001' AND rid = 101`);
  const find = (r: { body: { data: Record<string, Obj[]> } }) => r.body.data['30000001'].find((m) => m.mid === '1.200001001')!;
  const r = await eventually(() => http<{ data: Record<string, Obj[]> }>(svc.url, '/api/v1/events/markets?eid=30000001'),
    (r) => find(r).s === false && (find(r).r as Obj[])[0].na === 'India (A)');
  t.equal(find(r).s, false);
  t.same((find(r).r as Obj[])[0], { rid: 101, na: 'India (A)' });
});

t.test('a runner of a nested player-race market changed through SQL reloads its parent', async (t) => {
  const c = await sqlClient(t, svc.databaseUrl);
  const { rows } = await c.query<{ mid: string; parent_mid: string; eid: number }>(
    `SELECT mid, parent_mid, eid FROM markets WHERE parent_mid IS NOT NULL ORDER BY mid LIMIT 1`);
  const nested = rows[0];
  await c.query(`UPDATE runners SET na = 'Renamed Player' WHERE mid = $1 AND pos = 0`, [nested.mid]);
  const r = await eventually(() => http<{ data: Record<string, Obj[]> }>(svc.url, `/api/v1/events/markets?eid=${nested.eid}`),
    (r) => JSON.stringify(r.body).includes('Renamed Player'));
  const parent = r.body.data[String(nested.eid)].find((m) => m.mid === nested.parent_mid)!;
  const n = (parent.m as Obj[]).find((x) => x.mid === nested.mid)!;
  t.equal((n.r as Obj[])[0].na, 'Renamed Player');
});

t.test('a result written through SQL shows up in the result lookup', async (t) => {
  const c = await sqlClient(t, svc.databaseUrl);
  await c.query(`INSERT INTO results (mid, res) VALUES ('1.200001001', '101') ON CONFLICT (mid) DO UPDATE SET res = '101'`);
  const r = await eventually(() => http<Obj[]>(svc.url, '/api/v1/markets/result?mid=1.200001001'), (r) => r.body[0]?.res === '101');
  t.same(r.body, [{ mid: '1.200001001', mt: 'match-odd', res: '101', rt: false, ia: false }]);
});

t.test('a market deleted through SQL disappears from the list and the result lookup', async (t) => {
  const c = await sqlClient(t, svc.databaseUrl);
  await c.query(`DELETE FROM markets WHERE mid = '1.200001014'`);
  const r = await eventually(() => http<{ data: Record<string, Obj[]> }>(svc.url, '/api/v1/events/markets?eid=30000001'),
    (r) => !r.body.data['30000001'].some((m) => m.mid === '1.200001014'));
  t.notOk(r.body.data['30000001'].some((m) => m.mid === '1.200001014'));
  const res = await http<Obj[]>(svc.url, '/api/v1/markets/result?mid=1.200001014');
  t.same(res.body, []);
});

/** The pool as the sync uses it, counting its queries, so the test knows when the reload's have all failed. */
class CountedPool {
  started = 0;
  settled = 0;
  constructor(private readonly pool: pg.Pool) {}
  async query(text: string, values?: unknown[]): Promise<pg.QueryResult> {
    this.started++;
    try {
      return await this.pool.query(text, values);
    } finally {
      this.settled++;
    }
  }
}

t.test('a reload still in flight when the service stops schedules no retry that would keep the process alive', async (t) => {
  // Postgres that refuses (port 1): the reload fails after stop(), as one does when the pool ends under it at shutdown.
  const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/none', connectionTimeoutMillis: 2000 });
  t.teardown(() => pool.end());
  const lines: string[] = [];
  const db = new CountedPool(pool);
  const sync = new ModelSync(db as never, new ReadModel(), createLogger('warn', false, (l) => lines.push(l)));
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const before = timers();
  sync.reloadAll();
  sync.stop();
  // Once its queries have failed, a retry would have been scheduled and logged.
  await waitFor(() => db.started > 0 && db.settled === db.started, 'the reload\'s queries failed on the refusing Postgres', 10000);
  t.same(lines, [], 'no retry was logged');
  t.ok(timers() <= before, 'no timer left behind');
});
