import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { http } from '../helpers/service.js';
import { eventually } from '../helpers/wait.js';
import { KEY_CLI, postgresOn, postmasterPid, runTool, startMain, tempDir } from './processes.js';

/** Without DATABASE_URL: the tools use the embedded folder. */
const embeddedAt = (pgDir: string) => ({ DATABASE_URL: undefined, EMBEDDED_PG_DIR: pgDir });

t.test('beside a running service (AUTH=on), `key create` uses its embedded Postgres, and the key works on the service at once', async (t) => {
  const pgDir = join(await tempDir(t), 'pg');
  const svc = await startMain({ ...embeddedAt(pgDir), AUTH: 'on' });
  t.teardown(async () => {
    svc.child.kill('SIGTERM');
    await svc.exited;
  });
  t.equal((await http(svc.url, '/api/v1/sports')).status, 401, 'AUTH=on: no key, no data');
  const postgres = postmasterPid(pgDir);

  const run = await runTool(KEY_CLI, ['create', '--client', 'x', '--role', 'subscriber'], embeddedAt(pgDir));
  t.equal(run.code, 0, run.stderr);
  const key = run.stdout.trim();
  t.match(key, /^ok_[0-9a-f]{12}_\S+$/);
  // The service learns of the key by NOTIFY, moments after the command commits.
  const sports = await eventually(() => http(svc.url, '/api/v1/sports', { headers: { 'x-api-key': key } }), (r) => r.status === 200);
  t.equal(sports.status, 200);
  t.same(postgresOn(pgDir), [postgres], 'the service\'s Postgres still runs, and no other');
  t.equal((await http(svc.url, '/ready')).status, 200);
});

t.test('with nothing running on the folder, `key create` starts the embedded Postgres itself and stops it after', async (t) => {
  const pgDir = join(await tempDir(t), 'pg');
  const run = await runTool(KEY_CLI, ['create', '--client', 'x', '--role', 'subscriber'], embeddedAt(pgDir));
  t.equal(run.code, 0, run.stderr);
  t.match(run.stdout, /^ok_[0-9a-f]{12}_\S+\n$/);
  t.ok(existsSync(join(pgDir, 'PG_VERSION')), 'the folder holds a cluster');
  t.notOk(existsSync(join(pgDir, 'postmaster.pid')), 'its server stopped');
  t.same(postgresOn(pgDir), [], 'no Postgres left running on the folder');
});

t.test('`key --help` prints the usage, exit 0', async (t) => {
  const run = await runTool(KEY_CLI, ['--help'], {});
  t.equal(run.code, 0);
  t.match(run.stdout, /^usage: npm run key -- create --client NAME/);
  t.equal(run.stderr, '');
});

t.test('`key` with an unknown option: the parser\'s message, the usage, exit 2', async (t) => {
  const run = await runTool(KEY_CLI, ['list', '--colour'], {});
  t.equal(run.code, 2);
  t.match(run.stderr, /^key: Unknown option '--colour'/);
  t.match(run.stderr, /^usage: npm run key/m);
});
