import t from 'tap';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pgLib from 'pg';
import { startEmbedded, type EmbeddedServer } from '../../src/db/embedded.js';
import { createLogger } from '../../src/log.js';
import { errors } from '../../src/errors.js';
import { freePort } from '../helpers/net.js';
import { scrape, value } from '../helpers/metrics.js';
import { http, postJson, startTestService } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';
import { alive, captureErrorLogs, childrenOf, eventually, postInit, timedFetch, type Timed } from './lib.js';

/**
 * Postgres killed (SIGKILL, no shutdown) and started again while REST reads,
 * REST writes and reference ingest run concurrently against the in-process
 * service. The server is the test's own (as in test/db/outage.test.ts):
 * killing the suite's shared one would break every other file.
 */
// No request may take longer than this, outage or not. One that meets the outage waits at most a
// connect (0.5 s) and a statement with the client's read timeout (2 s + 1 s) before it is answered
// 503: about 3.5 s, so 8 s leaves a busy machine more than that again, while a request stuck on a
// dead connection would wait for ever.
const BOUND_MS = 8000;
const DOWN_MS = 1500; // how long Postgres stays dead at least
const SPORT = 88;

const errorLogs = captureErrorLogs(t);
// In production an uncaught exception ends the process: here it is recorded so the
// subtest below can name it, and the remaining figures still print.
const uncaught: string[] = [];
const onUncaught = (err: Error) => uncaught.push(String(err.stack ?? err).split('\n').slice(0, 4).join(' | '));
process.on('uncaughtException', onUncaught);
t.teardown(() => void process.off('uncaughtException', onUncaught));
const log = createLogger('error', false, (l) => process.stderr.write(l));
const root = await mkdtemp(join(tmpdir(), 'odds-fault-pg-'));
await chmod(root, 0o755); // the embedded server runs as the postgres user when tests run as root
const dir = join(root, 'pg');
const port = await freePort();
let pg: EmbeddedServer = await startEmbedded(dir, port, log);
const svc = await startTestService(t, { PG_CONNECT_TIMEOUT_MS: '500', PG_STATEMENT_TIMEOUT_MS: '2000' }, pg.url);
t.teardown(async () => {
  await svc.close();
  await pg.stop();
  await rm(root, { recursive: true, force: true });
});

/** Kills the postmaster and its backends with SIGKILL, as an OOM kill or a node loss would, and waits until they are gone. */
async function crashPostgres(): Promise<number> {
  const pid = Number(readFileSync(join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const backends = childrenOf(pid);
  process.kill(pid, 'SIGKILL');
  for (const b of backends) {
    try {
      process.kill(b, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  const all = [pid, ...backends];
  await waitFor(() => !all.some(alive), () => `postgres processes still alive after SIGKILL: ${all.filter(alive).join(',')}`, 5000, 25);
  return all.length;
}

// The sport every batch hangs off, created before the fault.
const setup = await postJson(svc.url, '/api/v1/ingest', { data: [{ kind: 'sport', si: SPORT, na: 'Fault Sport', a: true }] });
if (setup.status !== 200) throw new Error(`setup batch refused: ${setup.text}`);

/** Batch k: a league, an event in it and a market of that event, all with IDs of their own. */
const batch = (k: number) => [
  { kind: 'league', li: 880000 + k, si: SPORT, na: `Fault League ${k}` },
  { kind: 'event', eid: 88000000 + k, na: `Fault Event ${k}`, st: '2031-01-01T12:00:00.000Z', si: SPORT, li: 880000 + k },
  { kind: 'market', mid: `f.${k}`, eid: 88000000 + k, na: 'Match Odds', ty: 'match-odd', r: [{ rid: 1, na: 'A' }, { rid: 2, na: 'B' }] },
];

interface Sent extends Timed {
  k: number;
}

const reads: Timed[] = [];
const writes: Timed[] = [];
const batches: Sent[] = [];
let stop = false;
let nextBatch = 1;
const READ_PATHS = ['/api/v1/sports', '/api/v1/sports/events?si=4,1', '/api/v1/events/markets?eid=30000001', '/api/v1/markets/result?mid=1.200005001,1.200003001'];

// Each loop sends its next request once the one before is answered: the service paces the load.
const readLoop = async (n: number) => {
  for (let i = n; !stop; i++) {
    reads.push(await timedFetch(svc.url + READ_PATHS[i % READ_PATHS.length], {}, BOUND_MS));
  }
};
const writeLoop = async (n: number) => {
  for (let i = 0; !stop; i++) {
    const verb = i % 2 ? 'unsubscribe' : 'subscribe';
    writes.push(await timedFetch(`${svc.url}/api/v1/${verb}`, postInit({ data: [`w.${n}.${i % 10}`] }), BOUND_MS));
  }
};
const ingestLoop = async () => {
  while (!stop) {
    const k = nextBatch++;
    batches.push({ k, ...(await timedFetch(`${svc.url}/api/v1/ingest`, postInit({ data: batch(k) }), BOUND_MS)) });
  }
};

const tally = (xs: Timed[]) => {
  const m = new Map<string, number>();
  for (const x of xs) m.set(String(x.status || x.error), (m.get(String(x.status || x.error)) ?? 0) + 1);
  return [...m].map(([k, v]) => `${k}:${v}`).join(' ');
};

const before = await scrape(svc.url);
const loops = [...[0, 1, 2, 3].map(readLoop), ...[0, 1].map(writeLoop), ingestLoop(), ingestLoop()];
// The kill comes once the load is under way: a write and a batch answered 200 (a busy machine may take a while).
const warm = await eventually(async () => writes.some((w) => w.status === 200) && batches.some((b) => b.status === 200), (ok) => ok, 20000, 20);
if (!warm) throw new Error('no write and batch succeeded within 20 s before the fault');
const killedAt = Date.now();
const killed = await crashPostgres();
// Postgres stays dead at least DOWN_MS (time the test sets), and until each kind of load met the outage,
// however slowly a busy machine runs the loops: a read answered, a write and a batch refused.
const during = (x: Timed) => x.startedAt >= killedAt;
await waitFor(
  () => Date.now() - killedAt >= DOWN_MS && reads.some(during) && writes.some((w) => during(w) && w.status === 503) && batches.some((b) => during(b) && b.status === 503),
  () => `the load meeting the outage (since the kill: ${reads.filter(during).length} reads, writes ${tally(writes.filter(during))}, batches ${tally(batches.filter(during))})`,
  20000,
);
const restartAt = Date.now();
pg = await startEmbedded(dir, port, log);
const upAt = Date.now();
// Load goes on until a write and a batch have succeeded after the restart.
// Bounds for a machine many times oversubscribed: they only stop a service that never recovers from hanging the run.
const firstWrite = await eventually(
  async () => writes.find((w) => w.status === 200 && w.startedAt >= upAt),
  (w) => w !== undefined,
  60_000,
  20,
);
await eventually(async () => batches.some((b) => b.status === 200 && b.startedAt >= upAt), Boolean, 60_000, 20);
stop = true;
await Promise.all(loops);
const after = await scrape(svc.url);

const downWindow = (x: Timed) => x.startedAt >= killedAt && x.endedAt <= upAt;
const firstBatchOk = batches.find((b) => b.status === 200 && b.startedAt >= upAt);
const maxMs = (xs: Timed[]) => Math.max(...xs.map((x) => x.ms));

const db = new pgLib.Client({ connectionString: pg.url });
await db.connect();
t.teardown(() => db.end());
const rows = async (sql: string, params: unknown[]) => (await db.query(sql, params)).rows;
const ks = batches.map((b) => b.k);
const leagues = new Set((await rows('SELECT li FROM leagues WHERE li = ANY($1)', [ks.map((k) => 880000 + k)])).map((r) => Number(r.li) - 880000));
const events = new Set((await rows('SELECT eid FROM events WHERE eid = ANY($1)', [ks.map((k) => 88000000 + k)])).map((r) => Number(r.eid) - 88000000));
const markets = new Set((await rows('SELECT mid FROM markets WHERE mid = ANY($1)', [ks.map((k) => `f.${k}`)])).map((r) => Number(String(r.mid).slice(2))));
const runners = new Map((await rows('SELECT mid, count(*)::int AS n FROM runners WHERE mid = ANY($1) GROUP BY mid', [ks.map((k) => `f.${k}`)])).map((r) => [Number(String(r.mid).slice(2)), r.n as number]));
const written = (k: number) => [leagues.has(k), events.has(k), markets.has(k), runners.get(k) === 2];

t.comment(`postgres: SIGKILLed ${killed} processes, down ${restartAt - killedAt} ms, restart took ${upAt - restartAt} ms`);
t.comment(`reads:   ${reads.length} (${tally(reads)}), ${reads.filter(downWindow).length} while Postgres was down, max ${maxMs(reads)} ms`);
t.comment(`writes:  ${writes.length} (${tally(writes)}), max ${maxMs(writes)} ms`);
t.comment(`ingest:  ${batches.length} batches (${tally(batches)}), max ${maxMs(batches)} ms`);
t.comment(`recovery: first write ok ${firstWrite ? firstWrite.endedAt - upAt : NaN} ms after restart (${firstWrite ? firstWrite.endedAt - killedAt : NaN} ms after the kill); first ingest ok ${firstBatchOk ? firstBatchOk.endedAt - upAt : NaN} ms after restart`);
t.comment(`metrics: odds_pg_errors_total unavailable +${value(after, 'odds_pg_errors_total', 'kind="unavailable"') - value(before, 'odds_pg_errors_total', 'kind="unavailable"')}, listener_lost +${value(after, 'odds_pg_errors_total', 'kind="listener_lost"') - value(before, 'odds_pg_errors_total', 'kind="listener_lost"')}, idle_client_lost +${value(after, 'odds_pg_errors_total', 'kind="idle_client_lost"') - value(before, 'odds_pg_errors_total', 'kind="idle_client_lost"')}; ingest batches unavailable +${value(after, 'odds_ingest_batches_total', 'outcome="unavailable"') - value(before, 'odds_ingest_batches_total', 'outcome="unavailable"')}`);

t.test('the process survived the kill: no uncaught exception (a real service would have crashed)', async (t) => {
  t.same(uncaught, []);
});

t.test('REST reads answered 200 throughout, while Postgres was down too', async (t) => {
  t.same(reads.filter((r) => r.status !== 200).map((r) => `${r.status || r.error} after ${r.ms} ms`), [], 'no read refused, failed or hung');
  t.ok(reads.filter(downWindow).length > 0, 'reads were served inside the outage window');
});

t.test('REST writes answered 200 or 503 only, each within the bound', async (t) => {
  const statuses = new Set(writes.map((w) => w.status || w.error));
  t.same([...statuses].filter((s) => s !== 200 && s !== 503), [], `only 200 and 503 (${tally(writes)})`);
  t.ok(statuses.has(503), 'writes were refused with 503 while Postgres was down');
  t.ok(writes.some((w) => w.status === 200 && w.endedAt < killedAt), 'writes succeeded before the kill');
  t.ok(maxMs(writes) < BOUND_MS, `slowest write ${maxMs(writes)} ms`);
  // Refused before it reached Postgres, or cut off during its commit: either way the answer says which.
  const honest = new Set([
    'the database is unavailable; nothing was changed, try again',
    'the database did not confirm the commit, so the change may or may not have been applied; sending it again is safe',
  ]);
  const bodies = writes.filter((w) => w.status === 503).map((w) => JSON.parse(w.text) as { status: number; message: string });
  t.ok(bodies.every((b) => b.status === 0 && honest.has(b.message)), 'every 503 says whether the change may have been applied');
});

t.test('ingest answered 200 or 503 only, each within the bound', async (t) => {
  t.same(batches.filter((b) => b.status !== 200 && b.status !== 503).map((b) => `batch ${b.k}: ${b.status || b.error} ${b.text}`), [], tally(batches));
  t.ok(batches.some((b) => b.status === 503), 'batches were refused with 503 while Postgres was down');
  t.ok(maxMs(batches) < BOUND_MS, `slowest batch ${maxMs(batches)} ms`);
});

t.test('every acknowledged batch is in Postgres, whole', async (t) => {
  const acked = batches.filter((b) => b.status === 200);
  t.ok(acked.length > 0, `${acked.length} batches acked`);
  t.same(acked.filter((b) => written(b.k).some((w) => !w)).map((b) => `batch ${b.k}: ${written(b.k)}`), [], 'league, event, market and its 2 runners of every acked batch');
});

t.test('no batch is half-written, and no batch refused outside the crash instant left a row', async (t) => {
  t.same(batches.filter((b) => new Set(written(b.k)).size !== 1).map((b) => `batch ${b.k} (${b.status}): ${written(b.k)}`), [], 'each batch all or nothing');
  // A batch whose COMMIT reached the server just before the kill may be durable while its answer was lost:
  // only a batch in flight at the kill can be in doubt. Every other refused batch must have left nothing.
  // A batch committed while the pod could not yet load it back (Postgres just restarted) is refused
  // saying it was written: honest, and then it must be there whole.
  const inFlight = (b: Sent) => b.startedAt <= killedAt && b.endedAt >= killedAt;
  const saysWritten = (b: Sent) => b.status === 503 && (JSON.parse(b.text) as { message?: string }).message === errors.writtenNotShown().message;
  const refused = batches.filter((b) => b.status !== 200);
  t.same(refused.filter((b) => saysWritten(b) && !written(b.k).every(Boolean)).map((b) => `batch ${b.k}: ${written(b.k)}`), [], 'every batch refused as written but not shown is written whole');
  const leaked = refused.filter((b) => !inFlight(b) && !saysWritten(b) && written(b.k).some(Boolean));
  const doubt = refused.filter((b) => inFlight(b) && written(b.k).some(Boolean));
  t.same(leaked.map((b) => `batch ${b.k} (${b.status}) written`), [], `${refused.length} refused batches left no row`);
  t.comment(`refused batches in flight at the kill that committed anyway: ${doubt.length}; refused as written but not shown: ${refused.filter(saysWritten).length}`);
});

t.test('the service recovered by itself: writes and ingest succeed again', async (t) => {
  t.ok(firstWrite, 'a write succeeded after the restart while the load ran');
  t.ok(firstBatchOk, 'an ingest batch succeeded after the restart while the load ran');
  const r = await postJson(svc.url, '/api/v1/subscribe', { data: ['w.after'] });
  t.equal(r.status, 200);
  const b = await postJson(svc.url, '/api/v1/ingest', { data: batch(999999) });
  t.same(b.body, { status: 1, message: 'Ingested 3 items' });
  t.equal((await http(svc.url, '/ready')).status, 200);
});

t.test('the read model caught up with Postgres: REST lists exactly the events Postgres holds', async (t) => {
  const inPg = async () => (await rows('SELECT eid FROM events WHERE si = $1 ORDER BY eid', [SPORT])).map((r) => Number(r.eid));
  const expected = await inPg();
  const rest = await eventually(
    () => http<{ data: Record<string, { eid: number }[]> }>(svc.url, `/api/v1/sports/events?si=${SPORT}`),
    (r) => r.body.data[String(SPORT)].length === expected.length,
    10000,
  );
  t.same(rest.body.data[String(SPORT)].map((e) => e.eid).sort((a, b) => a - b), expected, `${expected.length} events`);
});

t.test('nothing was logged as an error (no 500, no unexpected write failure)', async (t) => {
  t.same(errorLogs, []);
});
