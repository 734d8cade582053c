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

t.test('SIGTERM under load: no REST request fails mid-flight, every socket gets 1001, exit 0, no error logged', async (t) => {
  const url = await freshDatabase(t);
  const svc = await run({ DATABASE_URL: url, DRAIN_DELAY_MS: '500', SIMULATOR: 'on', SIMULATOR_INTERVAL_MS: '20' });
  const { Client } = await import('./helpers/ws.js');
  const sockets = await Promise.all(Array.from({ length: 20 }, (_, i) => Client.connect(svc.url, { format: i % 2 ? 'proto' : 'json' })));
  await Promise.all(sockets.map((c) => c.request({ op: 'subscribe', mids: ['1.200001001'] })));
  let served = 0;
  let refused = 0;
  const failures: string[] = [];
  let stop = false;
  const loop = async () => {
    while (!stop) {
      try {
        const r = await fetch(svc.url + '/api/v1/sports');
        await r.text();
        if (r.status === 200) served++;
        else failures.push(`status ${r.status}`);
      } catch (err) {
        const code = (err as { cause?: { code?: string } }).cause?.code;
        // A connection refused never carried a request: the listen socket is closed, as it should be.
        if (code === 'ECONNREFUSED') refused++;
        else failures.push(String(code ?? err));
        await new Promise((r) => setTimeout(r, 5));
      }
    }
  };
  const loops = Array.from({ length: 4 }, loop);
  await new Promise((r) => setTimeout(r, 300));
  svc.child.kill('SIGTERM');
  const code = await svc.exited;
  stop = true;
  await Promise.all(loops);
  const closes = await Promise.all(sockets.map((c) => c.closed));
  t.equal(code, 0, 'exit code 0');
  t.ok(served > 0, `${served} requests served, ${refused} refused at connect after the listen socket closed`);
  t.same(failures, [], 'no request failed mid-flight');
  t.same([...new Set(closes.map((c) => c.code))], [1001], 'every socket closed with 1001');
  t.notMatch(svc.output(), /"level":"error"/, 'nothing logged as an error');
  t.match(svc.output(), /shutdown: readiness off[\s\S]*listen socket closed[\s\S]*sockets closed[\s\S]*postgres pool closed[\s\S]*"stopped"/, 'steps in order');
});

t.test('while Postgres is awaited at start, /health answers, /ready and the data routes say starting', async (t) => {
  const svc = await run({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', PG_CONNECT_TIMEOUT_MS: '200' }, false);
  let url = '';
  for (let i = 0; i < 100 && !url; i++) {
    url = /"msg":"listening; starting","url":"([^"]+)"/.exec(svc.output())?.[1] ?? '';
    await new Promise((r) => setTimeout(r, 50));
  }
  t.ok(url, 'listening before the database answered');
  t.same((await http(url, '/health')).body, { message: 'Server is running' });
  const ready = await http<{ status: number; message: string }>(url, '/ready');
  t.equal(ready.status, 503);
  t.match(ready.body.message, /starting/);
  const data = await http<{ status: number; message: string }>(url, '/api/v1/sports');
  t.equal(data.status, 503);
  t.same(Object.keys(data.body), ['status', 'message']);
  svc.child.kill('SIGKILL');
  await svc.exited;
});
