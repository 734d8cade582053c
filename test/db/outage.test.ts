import t from 'tap';
import { eventually } from '../helpers/wait.js';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers/net.js';
import { startEmbedded } from '../../src/db/embedded.js';
import { createLogger } from '../../src/log.js';
import { http, postJson, startTestService } from '../helpers/service.js';

/**
 * Postgres stopped and started again under the running service. It needs a
 * server of its own: stopping the suite's shared one would break other files.
 */
const log = createLogger('error', false, (l) => process.stderr.write(l));
const root = await mkdtemp(join(tmpdir(), 'odds-outage-'));
await chmod(root, 0o755); // the embedded server runs as the postgres user when tests run as root
t.teardown(() => rm(root, { recursive: true, force: true }));
const port = await freePort();
const dir = join(root, 'pg');
let pg = await startEmbedded(dir, port, log);
t.teardown(() => pg.stop());
const svc = await startTestService(t, { PG_CONNECT_TIMEOUT_MS: '500' }, pg.url);


const sportsBefore = await http(svc.url, '/api/v1/sports');
const marketsBefore = await http(svc.url, '/api/v1/events/markets?eid=30000001');

t.test('with Postgres down, reads keep answering from memory', async (t) => {
  await pg.stop();
  const sports = await http(svc.url, '/api/v1/sports');
  t.equal(sports.status, 200);
  t.equal(sports.text, sportsBefore.text);
  const markets = await http(svc.url, '/api/v1/events/markets?eid=30000001');
  t.equal(markets.text, marketsBefore.text);
  t.equal((await http(svc.url, '/health')).status, 200);
  t.equal((await http(svc.url, '/ready')).status, 200, 'still ready: the read model is loaded');
});

t.test('with Postgres down, writes answer 503 with the error body', async (t) => {
  const r = await postJson<{ status: number; message: string }>(svc.url, '/api/v1/subscribe', { data: ['5.5'] });
  t.equal(r.status, 503);
  t.equal(r.body.status, 0);
  t.match(r.body.message, /database is unavailable/);
});

const batch = [
  { kind: 'sport', si: 77, na: 'Curling', a: true },
  { kind: 'league', li: 7701, si: 77, na: 'World Curling' },
];

t.test('with Postgres down, reference ingest answers 503 and odds ingest still publishes', async (t) => {
  const r = await postJson<{ status: number; message: string }>(svc.url, '/api/v1/ingest', { data: batch });
  t.equal(r.status, 503);
  t.match(r.body.message, /database is unavailable/);
  const odds = await postJson(svc.url, '/api/v1/ingest', { data: [{ kind: 'odds', mid: '1.200001001', ts: Date.now(), st: 'OPEN', ip: true, r: [] }] });
  t.equal(odds.status, 200, 'odds never touch Postgres');
});

t.test('when Postgres is back, writes succeed again without a restart', async (t) => {
  pg = await startEmbedded(dir, port, log);
  const { default: pgLib } = await import('pg');
  const c = new pgLib.Client({ connectionString: pg.url });
  await c.connect();
  t.equal((await c.query('SELECT count(*)::int AS n FROM sports WHERE si = 77')).rows[0].n, 0, 'nothing of the refused batch was written');
  await c.end();
  const r = await eventually(() => postJson<{ status: number }>(svc.url, '/api/v1/subscribe', { data: ['5.5'] }), (r) => r.status === 200);
  t.equal(r.status, 200);
  t.same(r.body, { status: 1, message: 'Subscribed from market 5.5' });
});

t.test('when Postgres is back, the refused ingest batch is accepted and shows in REST', async (t) => {
  const r = await eventually(() => postJson(svc.url, '/api/v1/ingest', { data: batch }), (r) => r.status === 200);
  t.same(r.body, { status: 1, message: 'Ingested 2 items' });
  const sports = await eventually(() => http(svc.url, '/api/v1/sports'), (r) => r.text.includes('Curling'));
  t.match(sports.text, /"si":77,"na":"Curling"/);
});

t.test('when Postgres is back, NOTIFY refresh works again', async (t) => {
  const { default: pgLib } = await import('pg');
  const c = new pgLib.Client({ connectionString: pg.url });
  await c.connect();
  await c.query(`UPDATE sports SET na = 'Soccer after outage' WHERE si = 1`);
  await c.end();
  const r = await eventually(() => http(svc.url, '/api/v1/sports'), (r) => r.text.includes('Soccer after outage'));
  t.match(r.text, /Soccer after outage/);
});
