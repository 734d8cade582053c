import t from 'tap';
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import { eventually, waitFor } from '../helpers/wait.js';
import { http, postJson } from '../helpers/service.js';
import { postgresOn, postmasterPid, startMain } from '../cli/processes.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * The service's own embedded Postgres killed under it (SIGKILL of the
 * postmaster, as the OOM killer would): the service starts it again on the
 * same folder and port and writes work again; when it cannot, /ready says so.
 */
type Answer = { status: number; message: string };
const sport = (si: number) => ({ data: [{ kind: 'sport', si, na: `Sport ${si}`, a: true }] });
// No demo to seed: the cases write and read sports of their own.
const quiet = { SIMULATOR: 'off', DEMO_DATA: 'off', PG_CONNECT_TIMEOUT_MS: '500' };
const logged = (out: string) => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: string; msg: string; [k: string]: unknown });
/** One folder for both cases, in turn, so it is initialised once: the second breaks it for good. */
const pgDir = join(await tempDir(t), 'pg');

t.test('a postmaster killed with SIGKILL is restarted on the same folder, and a write succeeds within 30 s', async (t) => {
  const svc = await startMain({ EMBEDDED_PG_DIR: pgDir, ...quiet });
  t.teardown(() => svc.child.kill('SIGKILL'));
  t.equal((await postJson(svc.url, '/api/v1/ingest', sport(901))).status, 200, 'a write before the kill');
  const killed = postmasterPid(pgDir);
  process.kill(killed, 'SIGKILL');
  // The killed postmaster's backends live on for a moment and can still answer on the pool's open
  // connections: a write is proof of the restart only once the service has said it restarted.
  await waitFor(() => logged(svc.output()).some((l) => l.msg === 'embedded postgres restarted'), () => `the service never said it restarted Postgres:\n${svc.output().slice(-2000)}`, 30_000, 100);

  const write = await eventually(() => postJson<Answer>(svc.url, '/api/v1/ingest', sport(902)), (r) => r.status === 200, 30_000, 250);
  t.equal(write.status, 200, `a write succeeds again: ${write.text}`);
  t.not(postmasterPid(pgDir), killed, 'a new postmaster on the same folder');
  const sports = await eventually(() => http<{ si: number }[]>(svc.url, '/api/v1/sports'), (r) => r.body.some((s) => s.si === 902));
  t.ok(sports.body.some((s) => s.si === 901) && sports.body.some((s) => s.si === 902), 'the read model reloaded: data from before and after the kill');
  t.equal((await http(svc.url, '/ready')).status, 200);
  const lines = logged(svc.output());
  t.ok(lines.some((l) => l.msg.startsWith('embedded postgres exited; restarting') && l.why === 'killed by SIGKILL'), 'the exit is logged with its reason');
  t.ok(lines.some((l) => l.msg === 'embedded postgres restarted'), 'and the restart');
  svc.child.kill('SIGTERM');
  t.equal(await svc.exited, 0, 'it still shuts down cleanly');
  t.same(postgresOn(pgDir), [], 'stopping the restarted server too');
});

t.test('a postmaster that cannot come back: restarts stop, one error line says why, /ready answers 503 and reads go on', async (t) => {
  const svc = await startMain({ EMBEDDED_PG_DIR: pgDir, ...quiet });
  t.teardown(() => svc.child.kill('SIGKILL'));
  // Without PG_VERSION the folder is no data folder, so every restart fails.
  await rename(join(pgDir, 'PG_VERSION'), join(pgDir, 'PG_VERSION.away'));
  process.kill(postmasterPid(pgDir), 'SIGKILL');

  const ready = await eventually(() => http<Answer>(svc.url, '/ready'), (r) => r.status === 503, 40_000, 250);
  t.equal(ready.status, 503, 'not ready once the restarts ran out');
  t.match(ready.body.message, /embedded Postgres exited and could not be restarted in \d+ attempts/);
  const errors = logged(svc.output()).filter((l) => l.level === 'error');
  t.equal(errors.length, 1, 'one error line');
  t.match(errors[0].msg, /could not be restarted .*PG_VERSION|could not be restarted .*data directory/);
  t.ok(logged(svc.output()).filter((l) => l.msg === 'embedded postgres restart').length > 1, 'each try was logged');
  t.equal((await http(svc.url, '/api/v1/sports')).status, 200, 'reads are still served from memory');
  t.equal((await http(svc.url, '/health')).status, 200, 'and the process is alive');
});
