/**
 * The embedded Postgres's superuser password, on a server of the test's own in
 * a temporary folder: random, in a file only its owner may read, required on
 * every connection; and folders made with the old fixed password `postgres`
 * are moved to a random one on their next start.
 *
 * One folder serves every case, in turn, so it is initialised once (initdb is
 * most of this file's CPU): each case starts from the server running with the
 * password in its file, as a new folder's first start leaves it, and leaves it
 * so, but the last, which leaves it refused and stopped.
 */
import t, { type Test } from 'tap';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbedded, type EmbeddedServer } from '../../src/db/embedded.js';
import { PASSWORD_FILE } from '../../src/db/embedded-password.js';
import { runAs } from '../../src/db/embedded-root.js';
import { createLogger } from '../../src/log.js';

const log = createLogger('error', false, (l) => process.stderr.write(l));

/** A data folder path the `postgres` user can reach (it runs the server when tests run as root). */
async function folder(t: Test): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'odds-embedded-'));
  await chmod(root, 0o755);
  t.teardown(() => rm(root, { recursive: true, force: true }));
  return join(root, 'pg');
}


/** Logs in as `postgres` with `password`: 'ok', or the error's SQLSTATE. */
async function login(server: EmbeddedServer, password: string, run?: (c: pg.Client) => Promise<unknown>): Promise<string> {
  const url = new URL(server.url);
  const c = new pg.Client({ host: url.hostname, port: Number(url.port), user: 'postgres', password, database: 'postgres' });
  try {
    await c.connect();
    await run?.(c);
    return 'ok';
  } catch (err) {
    return (err as { code?: string }).code ?? (err as Error).message;
  } finally {
    await c.end().catch(() => undefined);
  }
}

const passwordIn = (dir: string): string => readFileSync(join(dir, PASSWORD_FILE), 'utf8').trim();
const INVALID_PASSWORD = '28P01';

const dir = await folder(t);
/** The server on `dir`, whichever start made it; undefined once stopped. */
let server: EmbeddedServer | undefined = await startEmbedded(dir, 0, log);
t.teardown(() => server?.stop());

/** Stops the server, so a case can change the folder as an earlier version or a stopped start left it. */
async function stop(): Promise<void> {
  await server?.stop();
  server = undefined;
}

t.test('a new folder gets a random password in a file only the user running Postgres may read', async (t) => {
  const file = statSync(join(dir, PASSWORD_FILE));
  t.equal(file.mode & 0o777, 0o600);
  t.equal(file.uid, (await runAs()).uid ?? process.getuid!(), 'owned by the user Postgres runs as');
  t.match(passwordIn(dir), /^[0-9a-f]{48}$/);
  t.notOk(existsSync(`${dir}.password`), 'nothing left beside the folder');
});

t.test('the old default password postgres is refused; the one in the file logs in', async (t) => {
  t.equal(await login(server!, 'postgres'), INVALID_PASSWORD);
  t.equal(await login(server!, passwordIn(dir)), 'ok');
  t.equal(new URL(server!.url).password, passwordIn(dir), 'the service connects with it');
});

t.test('every way in asks for the password with SCRAM, over TCP and the local socket alike', async (t) => {
  let methods: string[] = [];
  await login(server!, passwordIn(dir), async (c) => {
    methods = (await c.query<{ m: string }>('SELECT DISTINCT auth_method AS m FROM pg_hba_file_rules')).rows.map((r) => r.m);
  });
  t.same(methods, ['scram-sha-256']);
});

t.test('a folder made with the old password postgres gets a random one at its next start', async (t) => {
  // What a folder of an earlier version holds: the password postgres and no file.
  const before = passwordIn(dir);
  t.equal(await login(server!, before, (c) => c.query("ALTER USER postgres PASSWORD 'postgres'")), 'ok');
  await stop();
  await rm(join(dir, PASSWORD_FILE));

  server = await startEmbedded(dir, 0, log);
  const now = passwordIn(dir);
  t.not(now, 'postgres');
  t.not(now, before, 'a new one');
  t.match(now, /^[0-9a-f]{48}$/);
  t.equal(statSync(join(dir, PASSWORD_FILE)).mode & 0o777, 0o600);
  t.equal(await login(server, 'postgres'), INVALID_PASSWORD, 'the old password no longer works');
  t.equal(await login(server, now), 'ok');
});

t.test('a start stopped after setting the password but before writing its file: the next start finds it beside the folder', async (t) => {
  const pending = 'a'.repeat(48);
  t.equal(await login(server!, passwordIn(dir), (c) => c.query(`ALTER USER postgres PASSWORD '${pending}'`)), 'ok');
  await stop();
  await rm(join(dir, PASSWORD_FILE));
  await writeFile(`${dir}.password`, `${pending}\n`, { mode: 0o600 });

  server = await startEmbedded(dir, 0, log);
  t.equal(passwordIn(dir), pending);
  t.equal(await login(server, pending), 'ok');
  t.notOk(existsSync(`${dir}.password`));
});

t.test('a folder whose password is in no file is refused with what to do, and left stopped', async (t) => {
  t.equal(await login(server!, passwordIn(dir), (c) => c.query(`ALTER USER postgres PASSWORD '${'b'.repeat(48)}'`)), 'ok');
  await stop();
  await rm(join(dir, PASSWORD_FILE));
  await t.rejects(startEmbedded(dir, 0, log), { name: 'EmbeddedError', message: new RegExp(`has no ${PASSWORD_FILE} file .*write its superuser password into ${join(dir, PASSWORD_FILE)}`) });
  t.notOk(existsSync(join(dir, 'postmaster.pid')), 'the server was stopped');
});
