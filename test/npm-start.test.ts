/**
 * `npm start` as a user runs it, from this checkout (built by the suite's `npm run build:all`):
 * in a process group of its own, as a terminal, an IDE's stop button or a supervisor would have it,
 * and stopped by a signal sent to npm alone or to the whole group. And the tools as npm runs them:
 * straight from the build, which they refuse to run once a source is newer (cli/fresh.test.ts
 * judges the rule itself).
 */
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describeSettings } from '../src/config.js';
import { staleBuild } from '../src/cli/fresh.js';
import { http } from './helpers/service.js';
import { waitFor } from './helpers/wait.js';
import { KEY_CLI, MAIN, groupMembers, postgresOn, runTool } from './cli/processes.js';
import { tempDir } from './helpers/temp-dir.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const BUILT = join(ROOT, 'dist/src/main.js');

interface NpmStart {
  readonly pid: number;
  output(): string;
  readonly exited: Promise<number | null>;
}

/** `npm start -- ...args` with `env` over the suite's, leader of a process group of its own. */
function npmStart(env: Record<string, string>, args: string[] = []): NpmStart {
  const child = spawn('npm', ['start', ...(args.length ? ['--', ...args] : [])], {
    cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DATABASE_URL: '', HOST: '127.0.0.1', PORT: '0', LOG_FORMAT: 'json', DRAIN_DELAY_MS: '100', SIMULATOR: 'off', ...env },
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (out += s));
  // Once npm has exited and its output has ended: the service writes to the same pipes, and may outlive npm.
  const exited = new Promise<number | null>((ok) => child.on('close', (code, signal) => ok(code ?? (signal ? -1 : null))));
  return { pid: child.pid!, output: () => out, exited };
}

/**
 * One embedded data folder for every start below, in turn, each stopping its Postgres before the
 * next: it is initialised once rather than once per case (initdb is a second of CPU).
 */
const pgDir = join(await tempDir(t), 'pg');

const listening = (run: NpmStart) => /listening on (http:\/\/\S+) /.exec(run.output())?.[1];

/** npm start on a stale build would rebuild dist/ under the files running beside this one: refused instead, saying why. */
const stale = staleBuild();
const current = (t: Test): boolean => {
  if (stale) t.fail(`${stale} is newer than its build: run npm run build:all first (npm start would rebuild dist/ under the other test files)`);
  return !stale;
};

t.test('a signal to npm, or to its whole process group, stops the service and its embedded Postgres: nothing is left running; a start whose build is current does not rebuild', async (t) => {
  if (!current(t)) return;
  const before = statSync(BUILT).mtimeMs;
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    for (const to of ['npm', 'group'] as const) {
      const run = npmStart({ EMBEDDED_PG_DIR: pgDir });
      t.teardown(() => {
        try {
          process.kill(-run.pid, 'SIGKILL');
        } catch {
          // already gone, as it should be
        }
      });
      await waitFor(() => listening(run) !== undefined || run.output().includes('start failed'), () => `npm start listening:\n${run.output()}`, 90_000, 50);
      t.equal((await http(listening(run)!, '/ready')).status, 200, `${signal} to ${to}: ready before the signal`);
      t.equal(postgresOn(pgDir).length > 0, true, 'its Postgres runs');
      process.kill(to === 'npm' ? run.pid : -run.pid, signal);
      const code = await run.exited;
      if (signal === 'SIGTERM' && to === 'npm') t.equal(code, 0, 'npm passed SIGTERM on, and the service it ran exited 0');
      await waitFor(() => groupMembers(run.pid).length === 0 && postgresOn(pgDir).length === 0,
        () => `${signal} to ${to}: still running in the group ${JSON.stringify(groupMembers(run.pid))}, Postgres ${JSON.stringify(postgresOn(pgDir))}\n${run.output()}`, 30_000, 50);
      t.match(run.output(), new RegExp(`"msg":"shutting down","signal":"(${signal}|npm exited)"[\\s\\S]*"msg":"embedded postgres stopped"[\\s\\S]*"msg":"stopped"`), `${signal} to ${to}: a clean shutdown`);
      t.notMatch(run.output(), /building:/, 'the build was current: no rebuild');
    }
  }
  t.equal(statSync(BUILT).mtimeMs, before, 'dist/ untouched');
});

t.test('a bad setting is refused before any build, naming it', async (t) => {
  if (!current(t)) return;
  const bad = npmStart({ PORT: 'abc' });
  t.equal(await bad.exited, 2);
  t.match(bad.output(), /configuration error: PORT: must be a whole number, got "abc"/);
  t.notMatch(bad.output(), /building:/);
});

t.test('a port already taken stops npm start before its embedded Postgres is made: it names the port and the setting, and leaves no data folder', async (t) => {
  if (!current(t)) return;
  const holder = createServer();
  await new Promise<void>((ok) => holder.listen(0, '127.0.0.1', ok));
  t.teardown(() => holder.close());
  const port = (holder.address() as AddressInfo).port;
  const fresh = join(await tempDir(t), 'pg');
  for (const setting of ['PORT', 'METRICS_PORT']) {
    const run = npmStart({ EMBEDDED_PG_DIR: fresh, [setting]: String(port) });
    t.equal(await run.exited, 1, `${setting} taken: exit 1`);
    t.match(run.output(), `start failed: cannot listen on 127.0.0.1:${port}: the port is taken (${setting}): stop what holds it, or set ${setting} to another port`);
    t.notMatch(run.output(), /initialising embedded postgres/, `${setting} taken: no Postgres initialised`);
    t.notOk(existsSync(fresh), `${setting} taken: no data folder left in ${fresh}`);
  }
});

t.test('the freshness check: current, a source newer than its output, a board source newer than the bundle', async (t) => {
  const root = await tempDir(t);
  const write = (path: string, at: number) => {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), '//');
    utimesSync(join(root, path), at, at);
  };
  write('src/a.ts', 1000);
  write('src/web/board.css', 1000);
  write('dist/src/a.js', 2000);
  write('dist/web/index.html', 2000);
  t.equal(staleBuild(root), undefined, 'current');
  write('src/web/board.css', 3000);
  t.equal(staleBuild(root), 'src/web/board.css', 'the board is bundled from it');
  write('src/a.ts', 4000);
  t.equal(staleBuild(root), 'src/a.ts', 'a source newer than its compiled file');
  write('src/a.ts', 1000);
  write('src/b.ts', 1000);
  t.equal(staleBuild(root), 'src/b.ts', 'a source never compiled');
});

t.test('--help, through npm start and from the compiled file alike, lists every setting the service reads, each documented', async (t) => {
  const names = describeSettings().map((s) => s.name);
  t.ok(names.includes('PORT') && names.includes('DATABASE_URL') && names.includes('SHUTDOWN_TIMEOUT_MS'), 'read from config.ts');
  const documented = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
  const rows = documented.split('\n').filter((l) => l.startsWith('| `')).map((l) => l.split(' | ')[0]);
  t.same(names.filter((n) => !rows.some((r) => r.includes(`\`${n}\``))), [], 'each in docs/configuration.md');
  // A bad setting does not hide the help.
  const direct = await runTool(MAIN, ['--help'], { PORT: 'abc' });
  if (!current(t)) return;
  const viaNpm = npmStart({ PORT: 'abc' }, ['--help']);
  t.equal(await viaNpm.exited, 0);
  t.equal(direct.code, 0);
  for (const [how, text] of [['node dist/src/main.js --help', direct.stdout], ['npm start -- --help', viaNpm.output()]] as const) {
    t.match(text, /usage: npm start \[-- --fresh\]/, how);
    t.same(names.filter((n) => !new RegExp(`^  ${n} +default`, 'm').test(text)), [], `${how}: every setting listed`);
    t.match(text, /^ {2}PORT +default 8080; 0 to 65535$/m);
  }
});

t.test('a closed stdout (node dist/src/main.js | head -3) neither crashes the service nor leaves its Postgres running', async (t) => {
  const child = spawn(process.execPath, [MAIN], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, DATABASE_URL: '', EMBEDDED_PG_DIR: pgDir, HOST: '127.0.0.1', PORT: '0', LOG_FORMAT: 'json', DEMO_DATA: 'off', SIMULATOR: 'off', DRAIN_DELAY_MS: '100' },
  });
  t.teardown(() => child.kill('SIGKILL'));
  let lines = 0;
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const exited = new Promise<number | null>((ok) => child.on('exit', (code) => ok(code)));
  // What head does: read three lines, then close the pipe.
  await new Promise<void>((ok) => child.stdout.on('data', (d: Buffer) => {
    lines += d.toString().split('\n').length - 1;
    if (lines >= 3) {
      child.stdout.destroy();
      ok();
    }
  }));
  await waitFor(() => postgresOn(pgDir).length > 0, 'its Postgres started', 60_000, 50);
  // The service writes on (its start, then its shutdown) into the closed pipe.
  child.kill('SIGTERM');
  t.equal(await exited, 0, `exit 0:\n${stderr}`);
  t.match(stderr, /stdout is closed \(EPIPE\)/, 'said once, on stderr');
  t.same(postgresOn(pgDir), [], 'its Postgres stopped');
});

/**
 * The old scripts compiled the TypeScript first (6 to 10 s on an idle machine) and so rewrote
 * dist/, which the unchanged mtimes below rule out whatever the machine's speed.
 */
t.test('`npm run key -- --help` runs the compiled tool without building first', async (t) => {
  const before = [KEY_CLI, MAIN].map((f) => statSync(f).mtimeMs);
  const child = spawn('npm', ['run', '--silent', 'key', '--', '--help'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  const code = await new Promise((ok) => child.on('close', ok));
  t.equal(code, 0);
  t.match(stdout, /^usage: npm run key -- create/);
  t.same([KEY_CLI, MAIN].map((f) => statSync(f).mtimeMs), before, 'dist/ was not rebuilt');
});

/**
 * A checkout in miniature: a tool's source and its compiled file (which runs
 * the real check, copied in), and the protobuf schema with its output; every
 * source a minute older than its build.
 */
async function checkout(t: Test): Promise<string> {
  const root = await tempDir(t);
  const files: Record<string, string> = {
    'package.json': '{"type":"module"}',
    'src/cli/x.ts': '',
    'proto/odds.proto': '',
    'dist/src/cli/x.js': "import { runsAsTool } from './fresh.js';\nif (runsAsTool(import.meta.url)) console.log('ran');\n",
    'dist/src/odds/gen/odds.js': '',
  };
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(join(root, dirname(f)), { recursive: true });
    writeFileSync(join(root, f), text);
  }
  copyFileSync(join(ROOT, 'dist/src/cli/fresh.js'), join(root, 'dist/src/cli/fresh.js'));
  ageOf(root, 'src/cli/x.ts', 60);
  ageOf(root, 'proto/odds.proto', 60);
  return root;
}

/** Sets a file's modification time `seconds` ago. */
const ageOf = (root: string, file: string, seconds: number) => {
  const at = new Date(Date.now() - seconds * 1000);
  utimesSync(join(root, file), at, at);
};

t.test('a compiled tool on a current build runs; on a stale one it says so in one line and exits 2, running nothing', async (t) => {
  const root = await checkout(t);
  t.match(await runTool(join(root, 'dist/src/cli/x.js'), [], {}), { code: 0, stdout: 'ran\n', stderr: '' });
  ageOf(root, 'dist/src/cli/x.js', 120);
  t.same(await runTool(join(root, 'dist/src/cli/x.js'), [], {}), { code: 2, stdout: '', stderr: 'dist/ is older than src/cli/x.ts: run npm run build\n' });
});
