import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { http } from '../helpers/service.js';
import { KEY_CLI, postgresOn, postmasterPid, runTool, startMain } from './processes.js';
import { tempDir } from '../helpers/temp-dir.js';

/** Without DATABASE_URL: the tools use the embedded folder. */
const embeddedAt = (pgDir: string) => ({ DATABASE_URL: undefined, EMBEDDED_PG_DIR: pgDir });

// One folder through a user's first steps: a key made before the service ever ran, then the service
// started on that folder and keys made and revoked beside it. Sharing the folder spares a second
// cluster's initdb and migrations; the service runs without the demo set, which no check here reads.
t.test('with no embedded Postgres in the folder, `key list` and `key revoke` say so and make none; `key create` makes one, says which, and stops it after', async (t) => {
  const pgDir = join(await tempDir(t), 'pg');
  for (const args of [['list'], ['revoke', '0123456789ab']]) {
    const none = await runTool(KEY_CLI, args, embeddedAt(pgDir));
    t.equal(none.code, 1, args[0]);
    t.equal(none.stdout, '');
    t.match(none.stderr, `key: there is no embedded Postgres in ${pgDir} (EMBEDDED_PG_DIR), so nothing to read: set EMBEDDED_PG_DIR to the folder the service uses, or DATABASE_URL to its database`);
    t.notOk(existsSync(pgDir), `${args[0]}: no folder made`);
  }
  const run = await runTool(KEY_CLI, ['create', '--client', 'x', '--role', 'subscriber'], embeddedAt(pgDir));
  t.equal(run.code, 0, run.stderr);
  t.match(run.stderr, `key: database: the embedded Postgres in ${pgDir}, started for this command (no service runs on it)`);
  t.match(run.stdout, /^ok_[0-9a-f]{12}_\S+\n$/);
  t.ok(existsSync(join(pgDir, 'PG_VERSION')), 'the folder holds a cluster');
  t.notOk(existsSync(join(pgDir, 'postmaster.pid')), 'its server stopped');
  t.same(postgresOn(pgDir), [], 'no Postgres left running on the folder');
  const list = await runTool(KEY_CLI, ['list'], embeddedAt(pgDir));
  t.equal(list.code, 0, list.stderr);
  t.match(list.stdout, /^id\tclient\trole\tcreated\trevoked\tname\n[0-9a-f]{12}\tx\tsubscriber\t/, 'list reads the folder once it holds a database');

  t.test('beside a running service (AUTH=on) on that folder, `key create` uses its embedded Postgres; a created key works on the service at once, a revoked one is refused at once', async (t) => {
    const svc = await startMain({ ...embeddedAt(pgDir), AUTH: 'on', DEMO_DATA: 'off' });
    t.teardown(async () => {
      svc.child.kill('SIGTERM');
      await svc.exited;
    });
    t.equal((await http(svc.url, '/api/v1/sports')).status, 401, 'AUTH=on: no key, no data');
    t.equal((await http(svc.url, '/api/v1/sports', { headers: { 'x-api-key': run.stdout.trim() } })).status, 200, 'the key made before the service started works on it');
    const postgres = postmasterPid(pgDir);

    // The command returns once the service confirmed it holds the change: a request right after it sees it.
    for (let round = 0; round < 2; round++) {
      const run = await runTool(KEY_CLI, ['create', '--client', 'x', '--role', 'subscriber'], embeddedAt(pgDir));
      t.equal(run.code, 0, run.stderr);
      t.match(run.stderr, new RegExp(`^key: database: the embedded Postgres in ${pgDir} of the running service \\(npm start, pid ${svc.child.pid}\\)`));
      const key = run.stdout.trim();
      t.match(key, /^ok_[0-9a-f]{12}_\S+$/);
      t.equal((await http(svc.url, '/api/v1/sports', { headers: { 'x-api-key': key } })).status, 200, `round ${round}: the new key works at once`);
      const revoke = await runTool(KEY_CLI, ['revoke', key.slice(3, 15)], embeddedAt(pgDir));
      t.equal(revoke.code, 0, revoke.stderr);
      t.equal((await http(svc.url, '/api/v1/sports', { headers: { 'x-api-key': key } })).status, 401, `round ${round}: the revoked key is refused at once`);
    }
    t.same(postgresOn(pgDir), [postgres], 'the service\'s Postgres still runs, and no other');
    t.equal((await http(svc.url, '/ready')).status, 200);
  });
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
