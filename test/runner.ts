/**
 * Runs compiled test files as plain Node processes, a few at a time, longest first, and speaks TAP:
 * a passing file is one `ok` line, a failing one shows its own TAP and what it wrote to stderr.
 * No coverage instrumentation: what runs is what `npm start` runs. Unit files may share a process
 * (`batches`, batch/main.ts); the rest run one a process. The closing `# { total, pass, fail, skip }`
 * sums the files' own assertion counts (CI reads it); a file that dies or times out without its
 * count adds one failure.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { batchesOf, isUnitFile, splitBatch } from './batch/plan.js';
import { BATCH_ENV, BATCH_MAIN } from './batch/protocol.js';

export interface RunnerOptions {
  /** The folder paths are shown relative to and children run in. */
  readonly root: string;
  readonly files: readonly string[];
  /** Files at most at once. */
  readonly jobs: number;
  /**
   * Cores the running files may keep busy together, by their recorded CPU: most files mostly wait
   * (timers, sockets, other processes), so more of them run side by side than there are cores,
   * while the few busy ones are kept from starving each other's timing.
   */
  readonly cores: number;
  /**
   * tap's timeout in each file (TAP_TIMEOUT), which names the subtest that hung; a file may set a
   * longer one of its own (t.setTimeout).
   */
  readonly timeoutMs: number;
  /** Past this (or timeoutMs, if longer) the runner stops the file and all it started and fails it by name: what tap cannot stop. */
  readonly hardStopMs: number;
  readonly env: NodeJS.ProcessEnv;
  /** What each file took before, by path from `root`: the longest start first. */
  readonly durations: Readonly<Record<string, Recorded>>;
  readonly verbose: boolean;
  readonly write: (text: string) => void;
  /**
   * The unit files ({@link isUnitFile}) are split into this many processes, each running its share
   * one file after another (batch/main.ts); 0, or none given, runs every file in its own.
   */
  readonly batches?: number;
}

/** One file's last run: its wall-clock seconds and the CPU seconds it used. */
export interface Recorded { seconds: number; cpu: number }

export interface Counts { total: number; pass: number; fail: number; skip: number; todo: number }

export interface FileResult {
  readonly file: string;
  readonly ok: boolean;
  /** Why it failed, when its own TAP does not say: exit code, signal or timeout. */
  readonly reason?: string;
  readonly seconds: number;
  /** CPU seconds the file's process and what it waited for used: what it costs a busy machine. */
  readonly cpuSeconds: number;
  readonly counts: Counts;
}

export interface RunResult {
  readonly ok: boolean;
  readonly files: readonly FileResult[];
  readonly counts: Counts;
}

const KILL_GRACE_MS = 5_000;
/** After a file's process ends, how long what it started may go on writing to its output. */
const STRAY_GRACE_MS = 1_000;

/** Every `*.test.js` under the given files or folders (fixtures excluded), sorted. */
export function findTestFiles(paths: readonly string[]): string[] {
  const found = new Set<string>();
  const walk = (path: string): void => {
    if (statSync(path).isDirectory()) {
      for (const name of readdirSync(path)) if (name !== 'fixtures' && name !== 'node_modules') walk(join(path, name));
    } else if (path.endsWith('.test.js')) found.add(resolve(path));
  };
  for (const p of paths) {
    if (!existsSync(p)) throw new Error(`no such test file or folder: ${p}`);
    walk(p);
  }
  return [...found].sort();
}

/** Longest recorded first; a file with no record first of all, since it may be long. */
export function byDuration(files: readonly string[], root: string, durations: Readonly<Record<string, Recorded>>): string[] {
  const seconds = (f: string) => durations[relative(root, f)]?.seconds ?? Infinity;
  return [...files].sort((a, b) => seconds(b) - seconds(a) || a.localeCompare(b));
}

/** A file that waits still takes some CPU (its process starting, its sockets): never counted as free. */
const MIN_CORES = 0.1;

/** The cores a file keeps busy while it runs, by its record; one for a file never run. */
export function coresOf(file: string, root: string, durations: Readonly<Record<string, Recorded>>): number {
  const r = durations[relative(root, file)];
  return r && r.seconds > 0 ? Math.max(MIN_CORES, r.cpu / r.seconds) : 1;
}

/** What running a file costs the machine, by its record. */
export interface FileCost {
  cores(file: string): number;
}

/**
 * The next file to start, in queue order, that fits beside the running ones: at most `jobs` at
 * once and their cores within `cores`. The first in line always starts on an idle machine, so a
 * file busier than the budget still runs.
 */
export function nextFitting(queue: readonly string[], running: readonly string[], o: Pick<RunnerOptions, 'jobs' | 'cores'>, cost: FileCost): number {
  if (running.length >= Math.max(1, o.jobs)) return -1;
  if (running.length === 0) return queue.length ? 0 : -1;
  const busy = running.reduce((sum, f) => sum + cost.cores(f), 0);
  return queue.findIndex((f) => busy + cost.cores(f) <= o.cores);
}

export async function runFiles(o: RunnerOptions): Promise<RunResult> {
  const started = Date.now();
  const machineAtStart = machineCpu();
  const jobs = planJobs(o);
  const queue = byDuration(jobs.names, o.root, jobs.durations);
  const results: FileResult[] = [];
  const running = new Set<ChildProcess>();
  // Stopped from outside (Ctrl-C, a supervisor): no file starts after this, and those running stop.
  const stopAll = () => {
    queue.length = 0;
    for (const c of running) killGroup(c, 'SIGTERM');
  };
  process.on('SIGINT', stopAll);
  process.on('SIGTERM', stopAll);
  o.write(`TAP version 14\n1..${o.files.length}\n`);
  const cost: FileCost = { cores: (f) => coresOf(f, o.root, jobs.durations) };
  const busy = new Set<string>();
  await new Promise<void>((allDone) => {
    const next = () => nextFitting(queue, [...busy], o, cost);
    const fill = (): void => {
      for (let i = next(); i >= 0; i = next()) {
        const [job] = queue.splice(i, 1);
        busy.add(job);
        void jobs.run(job, running).then((done) => {
          busy.delete(job);
          for (const r of done) {
            results.push(r);
            report(r, results.length, o);
          }
          fill();
        });
      }
      if (busy.size === 0) allDone();
    };
    fill();
  });
  process.off('SIGINT', stopAll);
  process.off('SIGTERM', stopAll);
  const counts = results.reduce((sum, r) => add(sum, r.counts), zero());
  const failed = results.filter((r) => !r.ok);
  if (failed.length) {
    o.write(`# failed ${failed.length} of ${results.length} files:\n`);
    for (const r of failed) o.write(`#   ${relative(o.root, r.file)}${r.reason ? ` (${r.reason})` : ''}\n`);
  }
  o.write(`# { total: ${counts.total}, pass: ${counts.pass}, fail: ${counts.fail}, skip: ${counts.skip}, todo: ${counts.todo} }\n# time=${((Date.now() - started) / 1000).toFixed(1)}s\n`);
  const machine = machineBusy(machineAtStart);
  // Whether the run was held up by the machine (a busy neighbour, the database) or by the files' waits.
  if (machine !== undefined) o.write(`# the machine's CPU was ${Math.round(machine * 100)}% busy, the files' own ${Math.round(results.reduce((sum, r) => sum + r.cpuSeconds, 0))} s of it\n`);
  return { ok: failed.length === 0, files: results, counts };
}

interface Output { stdout: string; stderr: string }

/** What the queue holds: files, and batches of unit files under names of their own, with their records. */
interface Jobs {
  readonly names: readonly string[];
  readonly durations: Readonly<Record<string, Recorded>>;
  run(name: string, running: Set<ChildProcess>): Promise<(FileResult & Output)[]>;
}

function planJobs(o: RunnerOptions): Jobs {
  const record = (f: string) => o.durations[relative(o.root, f)];
  const units = o.batches ? o.files.filter((f) => isUnitFile(f)) : [];
  const batches = new Map(batchesOf(units, o.batches ?? 0, (f) => record(f)?.seconds).map((files, i) => [join(o.root, `unit files, batch ${i + 1}`), files]));
  const durations: Record<string, Recorded> = { ...o.durations };
  for (const [name, files] of batches) {
    // A batch with a file never run has no record either: it starts first, counted a core.
    const records = files.map(record);
    if (records.every(Boolean)) durations[relative(o.root, name)] = records.reduce((sum, r) => ({ seconds: sum.seconds + r!.seconds, cpu: sum.cpu + r!.cpu }), { seconds: 0, cpu: 0 });
  }
  const batched = new Set(units);
  return {
    names: [...o.files.filter((f) => !batched.has(f)), ...batches.keys()],
    durations,
    run: async (name, running) => {
      const files = batches.get(name);
      try {
        if (!files) return [fileResult(name, await runProcess(name, {}, o, running))];
        return batchResults(files, await runProcess(BATCH_MAIN, { [BATCH_ENV]: files.join('\n') }, o, running));
      } catch (err) {
        // The runner's own fault, not the files': still each one failed by name, and the run goes on.
        const reason = `the runner could not run it: ${(err as Error).message}`;
        return (files ?? [name]).map((file) => ({ file, ok: false, reason, seconds: 0, cpuSeconds: 0, counts: counted(zero(), false), stdout: '', stderr: '' }));
      }
    },
  };
}

/** How a process ended, as the runner saw it. */
interface ProcessEnd extends Output {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Set when the runner stopped it: after how long. */
  readonly stoppedAfterS?: number;
  readonly seconds: number;
  readonly cpuSeconds: number;
}

/** Why a process's end was a failure, whatever its TAP says; undefined for a clean exit. */
function endReason(p: ProcessEnd): string | undefined {
  return p.stoppedAfterS !== undefined ? `stopped after ${p.stoppedAfterS} s` : p.signal ? `killed by ${p.signal}` : p.code !== 0 ? `exit ${p.code}` : undefined;
}

function fileResult(file: string, p: ProcessEnd): FileResult & Output {
  const own = closingCounts(p.stdout);
  const reason = endReason(p) ?? (!own ? 'no TAP summary' : undefined);
  const ok = reason === undefined && own!.fail === 0;
  return { file, ok, reason: ok ? undefined : reason, seconds: p.seconds, cpuSeconds: p.cpuSeconds, counts: counted(own ?? zero(), ok), stdout: p.stdout, stderr: p.stderr };
}

/** A failure without a count of its own still counts, once, so CI's sum cannot read as clean. */
function counted(counts: Counts, ok: boolean): Counts {
  if (!ok && counts.fail === 0) {
    counts.total++;
    counts.fail++;
  }
  return counts;
}

/**
 * Each file of a batch as if it had run alone: its own TAP, counts and time, and a share of the
 * batch's CPU by its time. The file the process died or was stopped in fails with the reason, and
 * the files after it fail as not run. A batch that ended badly after its last file (any end but
 * the exit 1 a failed file makes) fails that file with the reason.
 */
function batchResults(files: readonly string[], p: ProcessEnd): (FileResult & Output)[] {
  const parts = splitBatch(p.stdout, files);
  const reported = parts.reduce((sum, part) => sum + (part.end?.ms ?? 0), 0) / 1000;
  const share = (seconds: number) => (p.seconds > 0 ? (p.cpuSeconds * seconds) / p.seconds : 0);
  const reason = endReason(p);
  const explained = p.code === 1 && p.stoppedAfterS === undefined && parts.some((q) => q.end && !q.end.ok);
  let missing = 0;
  return parts.map((part, i) => {
    const file = files[i];
    const end = part.end;
    if (!end) {
      const seconds = missing++ === 0 ? Math.max(0, p.seconds - reported) : 0;
      const why = missing === 1 ? `the batch ended while it ran (${reason ?? 'no reason given'})` : 'not run: the batch ended before it';
      return { file, ok: false, reason: why, seconds, cpuSeconds: share(seconds), counts: counted(zero(), false), stdout: part.tap, stderr: p.stderr };
    }
    const late = reason !== undefined && !explained && i === files.length - 1 ? `the batch ended badly after it (${reason})` : undefined;
    const ok = end.ok && !late;
    const why = late ?? (end.ok || end.counts.total > 0 ? undefined : 'it ran no test');
    const seconds = end.ms / 1000;
    return { file, ok, reason: why, seconds, cpuSeconds: share(seconds), counts: counted({ ...zero(), ...end.counts }, ok), stdout: part.tap, stderr: ok ? '' : p.stderr };
  });
}

function runProcess(script: string, extraEnv: NodeJS.ProcessEnv, o: RunnerOptions, running: Set<ChildProcess>): Promise<ProcessEnd> {
  const started = Date.now();
  const env = { ...o.env, ...extraEnv, TAP_TIMEOUT: String(Math.ceil(o.timeoutMs / 1000)) };
  // Its own process group, so a timeout also stops what the file started (services, Postgres).
  const child = spawn(process.execPath, [script], { cwd: o.root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  running.add(child);
  const out: Output = { stdout: '', stderr: '' };
  child.stdout!.setEncoding('utf8').on('data', (s: string) => (out.stdout += s));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (out.stderr += s));
  let timedOut = false;
  const stopMs = Math.max(o.timeoutMs, o.hardStopMs);
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child, 'SIGTERM');
    setTimeout(() => killGroup(child, 'SIGKILL'), KILL_GRACE_MS).unref();
  }, stopMs);
  // What the file left running would hold its output open, or outlive it: stopped once it ends.
  const strays = () => killGroup(child, 'SIGKILL');
  // The child's CPU lands in this process's reaped-children total when it exits.
  let cpuSeconds = 0;
  child.on('exit', () => {
    cpuSeconds = reapedCpu.take();
    setTimeout(strays, STRAY_GRACE_MS).unref();
  });
  return new Promise((done) => child.on('close', (code, signal) => {
    clearTimeout(timer);
    strays();
    running.delete(child);
    const seconds = (Date.now() - started) / 1000;
    done({ code, signal, stoppedAfterS: timedOut ? Math.round(stopMs / 1000) : undefined, seconds, cpuSeconds, ...out });
  }));
}

function report(r: FileResult & Output, n: number, o: RunnerOptions): void {
  const name = relative(o.root, r.file);
  const line = `${r.ok ? 'ok' : 'not ok'} ${n} - ${name} # time=${r.seconds.toFixed(1)}s cpu=${r.cpuSeconds.toFixed(1)}s\n`;
  if (r.ok && !o.verbose) return o.write(line);
  const body = r.stdout + (r.ok ? '' : r.stderr ? `# stderr:\n${r.stderr.split('\n').map((l) => `# ${l}`).join('\n')}\n` : '');
  const diag = r.reason ? `  ---\n  file: ${name}\n  reason: ${r.reason}\n  ...\n` : '';
  o.write(`# Subtest: ${name}\n${indent(body)}${line}${diag}`);
}

const indent = (text: string) => text.split('\n').filter((l, i, all) => l || i < all.length - 1).map((l) => `    ${l}\n`).join('');

/**
 * CPU seconds of the children reaped since the last call, from /proc/self/stat (cutime + cstime):
 * Node reports only its own. Files ending together may share a reading; 0 where /proc is missing.
 */
const reapedCpu = {
  last: 0,
  take(): number {
    const now = childrenCpu();
    const used = Math.max(0, now - this.last);
    this.last = now;
    return used;
  },
};

const CLOCK_TICKS = 100;

/** All cores' busy and total ticks since boot, from /proc/stat's first line. */
function machineCpu(): { busy: number; total: number } | undefined {
  try {
    const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const total = ticks.reduce((a, b) => a + b, 0);
    // idle and iowait are the 4th and 5th.
    return { busy: total - ticks[3] - ticks[4], total };
  } catch {
    return undefined;
  }
}

function machineBusy(since: ReturnType<typeof machineCpu>): number | undefined {
  const now = machineCpu();
  return since && now && now.total > since.total ? (now.busy - since.busy) / (now.total - since.total) : undefined;
}

function childrenCpu(): number {
  try {
    // Fields after the command name's closing parenthesis; cutime and cstime are the 16th and 17th of the line.
    const rest = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    return (Number(rest[13]) + Number(rest[14])) / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // already gone
  }
}

/** The root `# { total: N, pass: N, ... }` line tap prints last. */
export function closingCounts(tap: string): Counts | undefined {
  const line = tap.split('\n').reverse().find((l) => l.startsWith('# { total:'));
  if (!line) return undefined;
  const n = (key: string) => Number(new RegExp(`${key}: (\\d+)`).exec(line)?.[1] ?? 0);
  return { total: n('total'), pass: n('pass'), fail: n('fail'), skip: n('skip'), todo: n('todo') };
}

const zero = (): Counts => ({ total: 0, pass: 0, fail: 0, skip: 0, todo: 0 });
const add = (a: Counts, b: Counts): Counts => ({ total: a.total + b.total, pass: a.pass + b.pass, fail: a.fail + b.fail, skip: a.skip + b.skip, todo: a.todo + b.todo });

/** What earlier runs recorded: this checkout's own, else the committed one. A bare number is an older record's seconds. */
export function readDurations(paths: readonly string[]): Record<string, Recorded> {
  for (const p of paths) {
    try {
      const raw = JSON.parse(readFileSync(p, 'utf8')) as Record<string, Recorded | number>;
      return Object.fromEntries(Object.entries(raw).map(([f, r]) => [f, typeof r === 'number' ? { seconds: r, cpu: r } : r]));
    } catch {
      // none there yet
    }
  }
  return {};
}

/** This run's times over the record, so the next run orders and packs by them. */
export function writeDurations(path: string, before: Readonly<Record<string, Recorded>>, results: readonly FileResult[], root: string): void {
  const next: Record<string, Recorded> = { ...before };
  const tenth = (n: number) => Math.round(n * 10) / 10;
  for (const r of results) next[relative(root, r.file)] = { seconds: tenth(r.seconds), cpu: tenth(r.cpuSeconds) };
  mkdirSync(dirname(path), { recursive: true });
  const lines = Object.entries(next).sort(([a], [b]) => a.localeCompare(b)).map(([f, r]) => ` ${JSON.stringify(f)}: ${JSON.stringify(r)}`);
  writeFileSync(path, `{\n${lines.join(',\n')}\n}\n`);
}
