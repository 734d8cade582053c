import t from 'tap';
import { sqlClient } from '../helpers/db.js';
import { postJson, startTestService } from '../helpers/service.js';
import { captureErrorLogs, eventually, postInit, timedFetch } from './lib.js';

/**
 * A COMMIT whose answer never comes: the service cannot know whether the
 * change was applied, and must say exactly that (503, "may or may not have
 * been applied"), never "nothing was changed". The commit is made to hang by
 * a deferred constraint trigger this test adds, which sleeps at COMMIT for a
 * marked row; the backend is then terminated, or frozen with SIGSTOP.
 */
const STATEMENT_TIMEOUT_MS = 3000;
/** What this test waits for an answer at most: the answer itself comes from the client's read timeout, 1 s past the statement timeout. */
const BOUND_MS = 20_000;
const UNKNOWN = 'the database did not confirm the commit, so the change may or may not have been applied; sending it again is safe';

const errorLogs = captureErrorLogs(t);
const svc = await startTestService(t, { PG_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS) });
const db = await sqlClient(t, svc.databaseUrl);
await db.query(`CREATE FUNCTION hang_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(60); RETURN NULL; END $$`);
await db.query(`CREATE CONSTRAINT TRIGGER hang_commit AFTER INSERT OR UPDATE ON sports DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW WHEN (NEW.na LIKE 'hang%') EXECUTE FUNCTION hang_commit()`);

const sport = (si: number, na: string) => ({ data: [{ kind: 'sport', si, na, a: true }] });
const ingest = (body: unknown) => timedFetch(`${svc.url}/api/v1/ingest`, postInit(body), BOUND_MS);
/** The backend stuck in a COMMIT in the test's trigger. */
const stuck = () => eventually(
  async () => (await db.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'COMMIT' AND wait_event = 'PgSleep'`)).rows.map((r) => r.pid as number),
  (pids) => pids.length === 1,
  STATEMENT_TIMEOUT_MS - 500,
);
const stored = async (si: number) => (await db.query('SELECT na FROM sports WHERE si = $1', [si])).rows.map((r) => r.na as string);

t.test('the backend terminated during COMMIT: 503 saying the change may or may not have been applied', async (t) => {
  const answer = ingest(sport(901, 'hang 1'));
  const [pid] = await stuck();
  t.ok(pid, 'the COMMIT is hanging in the trigger');
  await db.query('SELECT pg_terminate_backend($1)', [pid]);
  const r = await answer;
  t.equal(r.status, 503, r.text);
  t.same(JSON.parse(r.text || '{}'), { status: 0, message: UNKNOWN });
  t.notMatch(r.text, /nothing was changed/);
});

t.test('sending it again is safe: the batch is accepted once the commit goes through', async (t) => {
  const r = await postJson(svc.url, '/api/v1/ingest', sport(901, 'Again'));
  t.same(r.body, { status: 1, message: 'Ingested 1 item' });
  t.same(await stored(901), ['Again']);
});

t.test('the backend frozen during COMMIT: 503 saying the change may or may not have been applied, by the client\'s read timeout', async (t) => {
  const answer = ingest(sport(902, 'hang 2'));
  const [pid] = await stuck();
  process.kill(pid, 'SIGSTOP');
  t.teardown(() => {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // already gone
    }
  });
  const r = await answer;
  t.equal(r.status, 503, `${r.status || r.error} after ${r.ms} ms: ${r.text}`);
  t.same(JSON.parse(r.text || '{}'), { status: 0, message: UNKNOWN });

  // The connection of that COMMIT is still waiting for its answer: it must not be handed to the next writes.
  for (let i = 0; i < 3; i++) {
    const w = await timedFetch(`${svc.url}/api/v1/subscribe`, postInit({ data: [`after.${i}`] }), BOUND_MS);
    t.equal(w.status, 200, `write ${i} after the unanswered COMMIT, with its backend still frozen: ${w.status || w.error} in ${w.ms} ms ${w.text}`);
  }
  const b = await ingest(sport(903, 'Healthy'));
  t.equal(b.status, 200, `a batch after it: ${b.status || b.error} in ${b.ms} ms ${b.text}`);
});

t.test('nothing was logged as an error', async (t) => {
  t.same(errorLogs, []);
});
