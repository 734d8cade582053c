import t, { type Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabase } from './helpers/db.js';
import { http } from './helpers/service.js';

/** `npm start` as a user runs it: the compiled entry point in its own process. */
const MAIN = new URL('../src/main.js', import.meta.url).pathname;

interface Running {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<number | null>;
}

function run(env: Record<string, string | undefined>, waitForUrl = true): Promise<Running> {
  const base = { ...process.env };
  delete base.DATABASE_URL;
  const child = spawn(process.execPath, [MAIN], { env: { ...base, HOST: '127.0.0.1', PORT: '0', LOG_FORMAT: 'json', DRAIN_DELAY_MS: '100', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((ok) => child.on('exit', (code) => ok(code)));
  return new Promise((resolve, reject) => {
    if (!waitForUrl) return resolve({ child, url: '', output: () => out, exited });
    const timer = setTimeout(() => reject(new Error(`no listening line in 30 s:\n${out}`)), 30000);
    const check = () => {
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1], output: () => out, exited });
      }
    };
    child.stdout!.on('data', check);
    void exited.then(() => { clearTimeout(timer); reject(new Error(`exited before listening:\n${out}`)); });
  });
}

async function tempDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'odds-main-'));
  await chmod(dir, 0o755);
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

t.test('with no DATABASE_URL it runs an embedded Postgres with demo data, and SIGTERM stops both with exit 0', async (t) => {
  const dir = await tempDir(t);
  const pgDir = join(dir, 'pg');
  const svc = await run({ EMBEDDED_PG_DIR: pgDir });
  const sports = await http<unknown[]>(svc.url, '/api/v1/sports');
  t.equal(sports.status, 200);
  t.ok(sports.body.length >= 4, 'demo sports loaded');
  t.ok(existsSync(join(pgDir, 'postmaster.pid')), 'embedded server running in the data folder');
  svc.child.kill('SIGTERM');
  t.equal(await svc.exited, 0);
  t.notOk(existsSync(join(pgDir, 'postmaster.pid')), 'embedded server stopped');
  t.match(svc.output(), /embedded postgres stopped/);

  const again = await run({ EMBEDDED_PG_DIR: pgDir });
  t.notMatch(again.output(), /demo data loaded/, 'a second start keeps the data and does not seed again');
  const sportsAgain = await http(again.url, '/api/v1/sports');
  t.same(sportsAgain.body, sports.body);
  again.child.kill('SIGINT');
  t.equal(await again.exited, 0);
});

t.test('with DATABASE_URL it uses that server and starts none', async (t) => {
  const url = await freshDatabase(t);
  const svc = await run({ DATABASE_URL: url, DEMO_DATA: 'on' });
  t.match(svc.output(), /"database":"external"/);
  t.notMatch(svc.output(), /embedded postgres started/);
  t.equal((await http(svc.url, '/ready')).status, 200);
  svc.child.kill('SIGTERM');
  t.equal(await svc.exited, 0);
});

t.test('a bad setting stops the start with exit 2, naming the variable', async (t) => {
  const svc = await run({ PORT: 'eighty' }, false);
  t.equal(await svc.exited, 2);
  t.match(svc.output(), /PORT: must be a whole number/);
});

t.test('on the pure-JS uWS fallback it refuses to start unless allowed', async (t) => {
  const svc = await run({ UWS_USE_FALLBACK: '1', DATABASE_URL: 'postgres://127.0.0.1:1/none' }, false);
  t.equal(await svc.exited, 1);
  t.match(svc.output(), /native uWebSockets.js binary did not load.*ALLOW_UWS_FALLBACK/);
});

t.test('a port already taken fails the start instead of sharing it', async (t) => {
  const url = await freshDatabase(t);
  const first = await run({ DATABASE_URL: url });
  const port = new URL(first.url).port;
  const second = await run({ DATABASE_URL: url, PORT: port }, false);
  t.equal(await second.exited, 1);
  t.match(second.output(), /cannot listen on 127.0.0.1:\d+/);
  first.child.kill('SIGTERM');
  t.equal(await first.exited, 0);
});
