import t, { type Test } from 'tap';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { dirname, join } from 'node:path';
import { demoDatabase, migratedDatabase } from './helpers/db.js';
import { http, postJson, type Reply } from './helpers/service.js';
import { waitFor } from './helpers/wait.js';
import { glibcVersion, noBuildMessage, whyNotLoaded } from '../src/http/uws.js';
import { TEST_RUNNER, lifelineOf, postgresOn, postmasterPid, runTool, startMain as run, type Running } from './cli/processes.js';
import { tempDir } from './helpers/temp-dir.js';
import { freePort } from './helpers/net.js';

/**
 * One data folder through a user's starts and stops, in order: each start after the first finds what
 * the one before left (the data, a Postgres left running), so the folder is initialised twice (at
 * first, and after --fresh) rather than once per case, which is most of this file's CPU.
 */
t.test('one embedded data folder, started, stopped and killed in turn', async (t) => {
  const pgDir = join(await tempDir(t), 'pg');
  const quiet = { EMBEDDED_PG_DIR: pgDir, SIMULATOR: 'off' };
  let sports: Reply<{ si: number }[]>;

  await t.test('with no DATABASE_URL it runs an embedded Postgres with demo data, and SIGTERM stops both with exit 0', async (t) => {
    const svc = await run({ EMBEDDED_PG_DIR: pgDir });
    sports = await http<{ si: number }[]>(svc.url, '/api/v1/sports');
    t.equal(sports.status, 200);
    t.ok(sports.body.length >= 4, 'demo sports loaded');
    t.ok(existsSync(join(pgDir, 'postmaster.pid')), 'embedded server running in the data folder');
    svc.child.kill('SIGTERM');
    t.equal(await svc.exited, 0);
    t.notOk(existsSync(join(pgDir, 'postmaster.pid')), 'embedded server stopped');
    t.match(svc.output(), /embedded postgres stopped/);
  });

  await t.test('a second start keeps the data and does not seed again; killed with SIGKILL, its embedded Postgres stops with it', async (t) => {
    const again = await run(quiet);
    t.teardown(() => again.child.kill('SIGKILL'));
    t.notMatch(again.output(), /demo data loaded/, 'a second start keeps the data and does not seed again');
    t.same((await http(again.url, '/api/v1/sports')).body, sports.body);
    t.ok(lifelineOf(postmasterPid(pgDir)), 'a watcher waits on the service');
    t.equal((await postJson(again.url, '/api/v1/ingest', { data: [{ kind: 'sport', si: 901, na: 'Curling', a: true }] })).status, 200);
    again.child.kill('SIGKILL');
    await again.exited;
    await waitFor(() => postgresOn(pgDir).length === 0, () => `its Postgres stopped: ${JSON.stringify(postgresOn(pgDir))}`, 30_000, 50);
  });

  await t.test('killed with SIGKILL with its watcher (no /bin/sh, or both killed), its Postgres is left running; the next start stops that one, starts its own and keeps the data', async (t) => {
    const first = await run(quiet);
    t.teardown(() => first.child.kill('SIGKILL'));
    t.notMatch(first.output(), /left running/, 'the SIGKILL before left nothing for this start');
    t.ok((await http<{ si: number }[]>(first.url, '/api/v1/sports')).body.some((s) => s.si === 901), 'the sport ingested before that SIGKILL is still there');
    const orphan = postmasterPid(pgDir);
    process.kill(lifelineOf(orphan)!, 'SIGKILL');
    first.child.kill('SIGKILL');
    await first.exited;
    t.same(postgresOn(pgDir), [orphan], 'its Postgres outlived it');

    const again = await run(quiet);
    t.teardown(() => again.child.kill('SIGKILL'));
    t.equal((await http(again.url, '/ready')).status, 200);
    const after = await http<{ si: number; na: string }[]>(again.url, '/api/v1/sports');
    t.same(after.body.find((s) => s.si === 901), { si: 901, na: 'Curling', a: true }, 'the sport is still there');
    t.match(again.output(), /stopping the embedded postgres left running by a process that is gone/);
    t.same(postgresOn(pgDir), [postmasterPid(pgDir)], 'one Postgres on the folder, its own');
    t.not(postmasterPid(pgDir), orphan);
    again.child.kill('SIGINT');
    t.equal(await again.exited, 0, 'SIGINT stops it with exit 0');
    t.same(postgresOn(pgDir), [], 'and it stops that one');
  });

  await t.test('--fresh deletes the embedded data folder first, so the demo is seeded anew; a start that fails after its Postgres started stops it', async (t) => {
    const fresh = await run(quiet, true, ['--fresh']);
    t.teardown(() => fresh.child.kill('SIGKILL'));
    t.match(fresh.output(), /embedded postgres data deleted for a fresh start/);
    t.match(fresh.output(), /demo data loaded/, 'seeded again');
    const after = await http<{ si: number }[]>(fresh.url, '/api/v1/sports');
    t.notOk(after.body.some((s) => s.si === 901), 'what was ingested before is gone');
    fresh.child.kill('SIGTERM');
    t.equal(await fresh.exited, 0);

    // A port another process holds is refused before the Postgres starts (npm-start.test.ts): here
    // both ports are free when tried, and the same, so the second bind fails after it started.
    const port = await freePort();
    const failed = await run({ ...quiet, PORT: String(port), METRICS_PORT: String(port) }, false);
    t.equal(await failed.exited, 1);
    t.match(failed.output(), new RegExp(`embedded postgres started[\\s\\S]*start failed: cannot listen on 127.0.0.1:${port}: .*\\(METRICS_PORT\\)`));
    t.same(postgresOn(pgDir), [], 'its Postgres did not outlive it');
  });
});
t.test('--fresh with DATABASE_URL is refused with exit 2 saying why; so is an unknown argument', async (t) => {
  const withUrl = await run({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' }, false, ['--fresh']);
  t.equal(await withUrl.exited, 2);
  t.match(withUrl.output(), /--fresh: deletes the embedded Postgres data folder, and DATABASE_URL is set/);
  const unknown = await run({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' }, false, ['--frsh']);
  t.equal(await unknown.exited, 2);
  t.match(unknown.output(), /unknown --frsh; the only ones are --fresh \(start from a clean embedded demo\) and --help/);
});

/** An address of this machine that is not loopback, to dial from outside loopback's reach. */
const outside = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
const dials = (host: string, port: string) => new Promise<boolean>((ok) => {
  const s = connect({ host, port: Number(port) }, () => { s.destroy(); ok(true); });
  s.on('error', () => ok(false));
});

/**
 * One service on DATABASE_URL with no HOST, asked in turn what each start with DATABASE_URL shows,
 * then stopped: one start rather than one per case. Its drain is the longest there is and its
 * shutdown timeout past it, so its stop proves that a process with no socket open does not wait
 * the drain out.
 */
t.test('one service on DATABASE_URL with no HOST', async (t) => {
  // A copy of the run's migrated and seeded template: its migrations and its seeding are not what is asked here.
  const url = await demoDatabase(t);
  const svc = await run({ DATABASE_URL: url, DEMO_DATA: 'on', HOST: undefined, DRAIN_DELAY_MS: '600000', SHUTDOWN_TIMEOUT_MS: '3600000' });
  t.teardown(() => svc.child.kill('SIGKILL'));
  const port = new URL(svc.url).port;

  await t.test('with DATABASE_URL it uses that server and starts none', async (t) => {
    t.match(svc.output(), /"database":"external"/);
    t.notMatch(svc.output(), /embedded postgres started/);
    t.equal((await http(svc.url, '/ready')).status, 200);
    t.not(svc.metricsUrl, svc.url, 'it prints where its metrics listen');
    t.match((await http<string>(svc.metricsUrl, '/metrics')).text, /^odds_build_info\{/m);
  });

  await t.test('with auth off and no HOST it listens on loopback only, and says so', { skip: !outside && 'no non-loopback IPv4 address' }, async (t) => {
    t.match(svc.output(), `listening on http://127.0.0.1:${port} (bound to 127.0.0.1:${port})`);
    t.ok(await dials('127.0.0.1', port), 'reached on 127.0.0.1');
    t.notOk(await dials(outside!, port), `not reached on ${outside}`);
  });

  await t.test('the start log and /metrics name the uWS build this host runs: 20.57 where glibc is 2.38 or newer, else 20.30', async (t) => {
    const glibc = glibcVersion();
    const expected = glibc && compareVersions(glibc, '2.38') >= 0 ? '20.57' : '20.30';
    t.match(svc.output(), new RegExp(`"node":"${process.version}","uws":"${expected}"`));
    const metrics = await http<string>(svc.metricsUrl, '/metrics');
    t.match(metrics.text, `odds_uws_build_info{build="${expected}"} 1`);
  });

  await t.test('a port already taken fails the start instead of sharing it, naming PORT', async (t) => {
    const second = await run({ DATABASE_URL: url, PORT: port }, false);
    t.equal(await second.exited, 1);
    t.match(second.output(), new RegExp(`start failed: cannot listen on 127.0.0.1:${port}: the port is taken or the address is not available \\(PORT\\)`));
  });

  await t.test('SIGTERM with no socket open: exit 0 at once, without waiting out the drain delay', async (t) => {
    await stopsAtOnce(t, svc, 'SIGTERM');
  });
});

/** `signal` to a service with no socket open: it exits 0, not waiting out its 10-minute drain (the test's bound fails first). */
async function stopsAtOnce(t: Test, svc: Running, signal: NodeJS.Signals): Promise<void> {
  svc.child.kill(signal);
  let code: number | null | undefined;
  void svc.exited.then((c) => (code = c));
  await waitFor(() => code !== undefined, `${signal}: the process exited (not waiting out its 10-minute drain)`, 60_000);
  t.equal(code, 0, signal);
}

t.test('with HOST=0.0.0.0 it listens on every interface, and says so; SIGINT with no socket open stops it at once with exit 0', async (t) => {
  const url = await migratedDatabase(t);
  const svc = await run({ DATABASE_URL: url, HOST: '0.0.0.0', DRAIN_DELAY_MS: '600000', SHUTDOWN_TIMEOUT_MS: '3600000' });
  t.teardown(() => svc.child.kill('SIGKILL'));
  const port = new URL(svc.url).port;
  t.match(svc.output(), `listening on http://127.0.0.1:${port} (bound to 0.0.0.0:${port} (every interface))`);
  if (outside) t.ok(await dials(outside, port), `reached on ${outside}`);
  else t.comment('no non-loopback IPv4 address to dial from');
  await stopsAtOnce(t, svc, 'SIGINT');
});
t.test('a bad setting stops the start with exit 2, naming the variable', async (t) => {
  const svc = await run({ PORT: 'eighty' }, false);
  t.equal(await svc.exited, 2);
  t.match(svc.output(), /PORT: must be a whole number/);
});

t.test('the socket cap: unset, derived from the open-file limit and said once at info, low limit or not; a warning only when WS_MAX_SOCKETS asks more than the limit allows', async (t) => {
  // The child inherits this process's limit, which Node has raised to the hard one as both started.
  const normal = Number(/^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1]);
  // The check runs before the database is reached: the start line after it is enough, then it stops.
  const start = async (env: Record<string, string>, openFiles?: number) => {
    const svc = await run({ ...env, DATABASE_URL: 'postgres://127.0.0.1:1/none' }, false, [], openFiles);
    await waitFor(() => svc.output().includes('"msg":"starting"'), () => `the start line:\n${svc.output()}`, 60_000, 50);
    // Nothing has started that a clean stop would stop: killed before it loads the service for nothing.
    svc.child.kill('SIGKILL');
    await svc.exited;
    return svc.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: string; msg: string } & Record<string, unknown>);
  };
  const derived = (lines: Awaited<ReturnType<typeof start>>) => lines.filter((l) => /WS_MAX_SOCKETS is not set/.test(l.msg));
  // Postgres is unreachable on purpose (it is never needed here), and says so: only the cap's warning counts.
  const warnings = (lines: Awaited<ReturnType<typeof start>>) => lines.filter((l) => l.level === 'warn' && /WS_MAX_SOCKETS|open-file/.test(l.msg));

  const low = 4096;
  const lowUnset = await start({}, low);
  t.same(derived(lowUnset).map((l) => [l.level, l.wsMaxSockets, l.openFiles]), [['info', (low - 1024) / 2, low]], 'a low limit, unset: the cap fits it, said once');
  t.same(warnings(lowUnset), [], 'and no warning');
  const lowSet = await start({ WS_MAX_SOCKETS: '50000' }, low);
  t.same(warnings(lowSet).map((l) => [l.msg, l.limit, l.needs]), [['WS_MAX_SOCKETS is more than the open-file limit allows through a reconnect storm of a full pod', low, 101024]], 'configured above a low limit: warned');
  t.match(warnings(lowSet)[0]?.remedy, `raise the limit to 101024 (ulimit -n, systemd LimitNOFILE, the container runtime's nofile) or set WS_MAX_SOCKETS to at most ${(low - 1024) / 2}`);

  const fits = Math.min(50_000, Math.floor((normal - 1024) / 2));
  const normalUnset = await start({});
  t.same(derived(normalUnset).map((l) => l.wsMaxSockets), [fits], `this machine's limit (${normal}), unset: at most ${fits}`);
  t.same(warnings(normalUnset), [], 'no warning: a newcomer\'s first start is quiet');
  const normalSet = await start({ WS_MAX_SOCKETS: String(fits) });
  t.same([...derived(normalSet), ...warnings(normalSet)], [], 'configured within the limit: nothing said');
});

t.test('a build that gives its pure-JS fallback counts as not loading: npm start and npm test each say so in one line, starting no Postgres', async (t) => {
  const forced = { UWS_BUILD: '20.30', UWS_USE_FALLBACK: '1' };
  const dir = await tempDir(t);
  const pgDir = join(dir, 'pg');
  const svc = await run({ ...forced, EMBEDDED_PG_DIR: pgDir }, false);
  t.equal(await svc.exited, 1);
  t.match(svc.output(), /^cannot start: UWS_BUILD=20.30 pins a uWebSockets.js build that does not load natively on Node [^\n]*v20.30 gave its pure-JS fallback instead of a native binary[^\n]*\n$/);
  const tests = await runTool(TEST_RUNNER, [], { ...forced, DATABASE_URL: undefined, EMBEDDED_PG_DIR: pgDir });
  t.equal(tests.code, 1);
  t.match(tests.stderr, /^npm test: cannot run: UWS_BUILD=20.30 pins a uWebSockets.js build that does not load natively on Node [^\n]*\n$/);
  t.equal(tests.stdout, '', 'no test ran');
  t.same(readdirSync(dir), [], 'no embedded Postgres was made');
});

/** The build this host cannot load natively: 20.57 below glibc 2.38, 20.30 on any Node after 20; none when both load. */
function unloadableBuild(): string | undefined {
  const glibc = glibcVersion();
  if (glibc && compareVersions(glibc, '2.38') < 0) return '20.57';
  return Number(process.versions.node.split('.')[0]) > 20 ? '20.30' : undefined;
}

t.test('when UWS_BUILD pins a build this host cannot load, the start stops with one line naming UWS_BUILD, Node, glibc and what to do', { skip: unloadableBuild() ? false : 'every build loads on this host and Node' }, async (t) => {
  const glibc = glibcVersion();
  const pin = unloadableBuild()!;
  const svc = await run({ UWS_BUILD: pin, DATABASE_URL: 'postgres://127.0.0.1:1/none' }, false);
  t.equal(await svc.exited, 1);
  const lines = svc.output().trim().split('\n');
  t.equal(lines.length, 1, 'one line');
  t.match(lines[0], `cannot start: UWS_BUILD=${pin} pins a uWebSockets.js build that does not load natively on Node ${process.version}`);
  t.match(lines[0], glibc ? `glibc ${glibc}` : 'no glibc');
  t.match(lines[0], /Unset UWS_BUILD to let the service pick the newest build that loads, or run Node 22 or 24 on a host with glibc 2.38 or newer/);
});

t.test('a build whose binary for this Node is missing is named by the file it could not load, not by its loader', async (t) => {
  // The v20.57 loader as installed, in a folder holding none of its binaries.
  const dir = join(await tempDir(t), 'uws');
  mkdirSync(dir);
  for (const f of ['uws.js', 'package.json']) copyFileSync(join(dirname(createRequire(import.meta.url).resolve('uWebSockets.js-v20.57')), f), join(dir, f));
  let err: unknown;
  try {
    createRequire(import.meta.url)(join(dir, 'uws.js'));
  } catch (e) {
    err = e;
  }
  t.match(String(err), /Require stack:\n- /, 'the loader\'s own error ends with the require stack');
  const binary = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  t.equal(whyNotLoaded(err, dir), `cannot find ${join(dir, binary)}`);
  t.equal(whyNotLoaded(new Error('advice\n\n/lib/libc.so.6: version `GLIBC_2.38\' not found (required by /x/uws.node)'), dir), "/lib/libc.so.6: version `GLIBC_2.38' not found (required by /x/uws.node)", 'the linker\'s line as it is');
});

t.test('unpinned, the one line says no build loads and names the Node to run, not UWS_BUILD', async (t) => {
  // No host here lacks every build, so the unpinned line is read from the function both starts print.
  const line = noBuildMessage({ pinned: undefined, failure: 'v20.57: not installed; v20.30: not installed' });
  t.match(line, `no uWebSockets.js build loads natively on Node ${process.version}`);
  t.match(line, /v20.57: not installed; v20.30: not installed\. Run Node 22 or 24 on a host with glibc 2.38 or newer/);
  t.notMatch(line, /UWS_BUILD/);
});

t.test('SIGTERM under load: no REST request fails mid-flight, every socket is held through the drain delay then gets 1001, exit 0 within the timeout, no error logged', async (t) => {
  const url = await migratedDatabase(t);
  const drainMs = 500;
  const svc = await run({ DATABASE_URL: url, DRAIN_DELAY_MS: String(drainMs), SHUTDOWN_TIMEOUT_MS: '20000', SIMULATOR: 'on', SIMULATOR_INTERVAL_MS: '20' });
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
        // A connection refused never carried a request: the listen socket is closed, as it should be, and this loop is done.
        if (code === 'ECONNREFUSED') return void refused++;
        failures.push(String(code ?? err));
      }
    }
  };
  const loops = Array.from({ length: 4 }, loop);
  // Load under way, however slow the machine: SIGTERM arrives with requests in flight.
  await waitFor(() => served >= 20 || failures.length > 0, 'REST requests served before SIGTERM', 60_000, 5);
  const signalled = Date.now();
  const closedAt = sockets.map((c) => c.closed.then(() => Date.now()));
  svc.child.kill('SIGTERM');
  const code = await svc.exited;
  stop = true;
  await Promise.all(loops);
  const closes = await Promise.all(sockets.map((c) => c.closed));
  // A lower bound only: a busy machine makes the wait longer, never shorter (less a timer's tolerance).
  const heldMs = Math.min(...(await Promise.all(closedAt))) - signalled;
  t.ok(heldMs >= drainMs - 100, `every socket was held through the drain delay: the first closed after ${heldMs} ms`);
  t.equal(code, 0, 'exit code 0: done within SHUTDOWN_TIMEOUT_MS');
  t.ok(served > 0, `${served} requests served, ${refused} refused at connect after the listen socket closed`);
  t.same(failures, [], 'no request failed mid-flight');
  t.same([...new Set(closes.map((c) => c.code))], [1001], 'every socket closed with 1001');
  t.notMatch(svc.output(), /"level":"error"/, 'nothing logged as an error');
  t.match(svc.output(), /shutdown: readiness off[\s\S]*listen socket closed[\s\S]*sockets closed[\s\S]*postgres pool closed[\s\S]*"stopped"/, 'steps in order');
});

t.test('while Postgres is awaited at start, /health answers, /ready and the data routes say starting; SIGTERM then stops what started and exits 0', async (t) => {
  const svc = await run({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', PG_CONNECT_TIMEOUT_MS: '200' }, false);
  const listening = () => /"msg":"listening; starting","url":"([^"]+)"/.exec(svc.output())?.[1] ?? '';
  await waitFor(() => listening() !== '', () => `the listening line before the database answered:\n${svc.output()}`, 60_000, 50);
  const url = listening();
  t.ok(url, 'listening before the database answered');
  t.same((await http(url, '/health')).body, { message: 'Server is running' });
  const ready = await http<{ status: number; message: string }>(url, '/ready');
  t.equal(ready.status, 503);
  t.match(ready.body.message, /starting/);
  const data = await http<{ status: number; message: string }>(url, '/api/v1/sports');
  t.equal(data.status, 503);
  t.same(Object.keys(data.body), ['status', 'message']);
  svc.child.kill('SIGTERM');
  t.equal(await svc.exited, 0, `exit 0 on a signal during start:\n${svc.output()}`);
  t.match(svc.output(), /"msg":"stopped"/, 'says it stopped');
  t.notMatch(svc.output(), /start failed/, 'a stop asked for is not a failed start');
  await t.rejects(http(url, '/health'), 'the listener it had started is closed');
});

const notRoot = process.getuid?.() !== 0 && 'only run as root does the embedded server run as another user';

t.test('run as root with the data folder where the postgres user cannot enter: one line naming the folder and the remedy, exit 1', { skip: notRoot }, async (t) => {
  const locked = await tempDir(t, 0o700);
  const svc = await run({ EMBEDDED_PG_DIR: join(locked, 'pg') }, false);
  t.equal(await svc.exited, 1);
  const errors = svc.output().split('\n').filter((l) => l.includes('"level":"error"')).map((l) => (JSON.parse(l) as { msg: string }).msg);
  t.equal(errors.length, 1, svc.output());
  t.match(errors[0], `start failed: run as root, the embedded Postgres runs as the system user "postgres", which cannot enter ${locked} `);
  t.match(errors[0], /set DATABASE_URL to a Postgres server, set EMBEDDED_PG_DIR to a folder it can reach, or run chmod o\+x/);
  t.notMatch(svc.output(), /\n\s+at |undefined/, 'no stack trace, no undefined');
});

t.test('npm test as root with the data folder where the postgres user cannot enter: the same one line, exit 1', { skip: notRoot }, async (t) => {
  const locked = await tempDir(t, 0o700);
  const run = await runTool(TEST_RUNNER, [], { DATABASE_URL: undefined, EMBEDDED_PG_DIR: join(locked, 'pg') });
  t.equal(run.code, 1);
  t.match(run.stderr, new RegExp(`^npm test: run as root, the embedded Postgres runs as the system user "postgres", which cannot enter ${locked} .*chmod o\\+x ${locked}\n$`));
});

function compareVersions(a: string, b: string): number {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}
