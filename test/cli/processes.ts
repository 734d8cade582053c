/**
 * The compiled entry points run as a user runs them, each in its own process:
 * `npm start` (dist/src/main.js) and the command-line tools.
 */
import { spawn, type ChildProcess, type ChildProcessByStdio, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Test } from 'tap';

export const MAIN = new URL('../../src/main.js', import.meta.url).pathname;
export const KEY_CLI = new URL('../../src/cli/key.js', import.meta.url).pathname;
export const IMPORT_CLI = new URL('../../src/cli/import.js', import.meta.url).pathname;
export const TEST_RUNNER = new URL('../run.js', import.meta.url).pathname;

export interface Running {
  child: ChildProcess;
  url: string;
  /** Where `/metrics` is served, apart from `url`. */
  metricsUrl: string;
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * The service with `env` over the suite's (DATABASE_URL removed: an embedded server unless given;
 * HOST 127.0.0.1 unless given, undefined removing it) and `args` on its command line; under an
 * open-file limit of `openFiles` (soft and hard) when given, else the suite's.
 */
export function startMain(env: Record<string, string | undefined>, waitForUrl = true, args: string[] = [], openFiles?: number): Promise<Running> {
  const base = { ...process.env };
  delete base.DATABASE_URL;
  const argv = [process.execPath, MAIN, ...args];
  const command = openFiles === undefined ? argv : ['/bin/sh', '-c', 'ulimit -n "$0" && exec "$@"', String(openFiles), ...argv];
  const child = spawn(command[0]!, command.slice(1), { env: { ...base, HOST: '127.0.0.1', PORT: '0', LOG_FORMAT: 'json', DRAIN_DELAY_MS: '100', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((ok) => child.on('exit', (code) => ok(code)));
  return new Promise((resolve, reject) => {
    if (!waitForUrl) return resolve({ child, url: '', metricsUrl: '', output: () => out, exited });
    // A bound, not a pace: a fresh embedded Postgres on a busy CI machine took 16 s to initialise, and the start 31 s in all.
    const timer = setTimeout(() => reject(new Error(`no listening line in 120 s:\n${out}`)), 120_000);
    const check = () => {
      // Both lines come in one write; the first ends with the address bound.
      const m = /listening on (http:\/\/\S+) \(bound to [^\n]*\)\nmetrics and probes on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[1], metricsUrl: m[2], output: () => out, exited });
      }
    };
    child.stdout!.on('data', check);
    void exited.then(() => { clearTimeout(timer); reject(new Error(`exited before listening:\n${out}`)); });
  });
}

export interface Run { code: number | null; stdout: string; stderr: string }

/** A tool run to its end, with `env` over the suite's. */
export function runTool(script: string, args: string[], env: Record<string, string | undefined>): Promise<Run> {
  const child = spawn(process.execPath, [script, ...args], { env: { ...process.env, LOG_FORMAT: 'json', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  // A hung tool must fail the test, not the whole suite.
  const guard = setTimeout(() => child.kill('SIGKILL'), 90_000);
  return new Promise((ok) => child.on('close', (code) => {
    clearTimeout(guard);
    ok({ code, stdout, stderr });
  }));
}

/** A tool started in its own process: its output so far, its exit, and a SIGKILL when the test ends. */
export function running(t: Test, child: ChildProcessWithoutNullStreams | ChildProcessByStdio<null, Readable, Readable>) {
  const run = { child, stdout: '', stderr: '', exited: new Promise<number | null>((ok) => child.on('close', (code) => ok(code))) };
  child.stdout.setEncoding('utf8').on('data', (s: string) => (run.stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (run.stderr += s));
  t.teardown(() => child.kill('SIGKILL'));
  return run;
}

/** The pids of every Postgres server process running on the data folder (Linux /proc). */
export function postgresOn(pgDir: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (argv[0].endsWith('/postgres') && argv[argv.indexOf('-D') + 1] === pgDir) pids.push(Number(name));
    } catch {
      // gone while listing
    }
  }
  return pids;
}

/** The postmaster's pid from its lock file in the data folder. */
export const postmasterPid = (pgDir: string): number => Number(readFileSync(join(pgDir, 'postmaster.pid'), 'utf8').split('\n')[0]);


/** The pids of every live process in the process group `pgid` (Linux /proc): what a signal to the group reaches. */
export function groupMembers(pgid: number): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const [, state, , group] = /^\d+ \(.*\) (\S) (\d+) (\d+)/s.exec(readFileSync(`/proc/${name}/stat`, 'utf8'))!;
      if (Number(group) === pgid && state !== 'Z') pids.push(Number(name));
    } catch {
      // gone while listing
    }
  }
  return pids;
}

/** The watcher that stops the postmaster `pid` when its starter dies (db/embedded-process.ts), if any. */
export function lifelineOf(pid: number): number | undefined {
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (argv[0] === '/bin/sh' && argv[2]?.includes('read -r _') && argv.at(-1) === String(pid)) return Number(name);
    } catch {
      // gone while listing
    }
  }
  return undefined;
}
