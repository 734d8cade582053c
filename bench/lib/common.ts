/**
 * Shared plumbing of the benchmarks: settings, CPU pinning, spawning the servers under test,
 * reading their CPU time and memory from /proc, a microsecond latency histogram, and tables.
 * Everything listens on and talks to 127.0.0.1 only.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync, mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project root (dist/bench/lib/common.js is three levels down). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const RESULTS = join(ROOT, 'bench', 'results');
export const DIST = join(ROOT, 'dist');

// ---- settings ----
// One way of reading a benchmark's settings: each reads its own once, into a frozen object, with
// these; a value that is set but unusable stops the run at once, naming the variable, rather than
// measuring something else than was asked.

/** A positive number; `fallback` when unset or empty (without one, undefined: "unset" is a setting of its own). */
export function envNumber(name: string, fallback: number): number;
export function envNumber(name: string): number | undefined;
export function envNumber(name: string, fallback?: number): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

/** A comma-separated list; with `allowed`, each item must be one of them. */
export function envList<T extends string = string>(name: string, fallback: readonly T[], allowed?: readonly T[]): T[] {
  const raw = process.env[name];
  const items = raw ? raw.split(',').map((s) => s.trim()).filter(Boolean) : [...fallback];
  const bad = allowed ? items.filter((i) => !allowed.includes(i as T)) : [];
  if (bad.length) throw new Error(`${name} takes ${allowed!.join(', ')}; got "${bad.join(',')}"`);
  return items as T[];
}

/** A comma-separated list of positive numbers. */
export function envNumbers(name: string, fallback: readonly number[]): number[] {
  const items = envList(name, fallback.map(String));
  const bad = items.filter((i) => !(Number(i) > 0));
  if (bad.length) throw new Error(`${name} must list positive numbers, got "${bad.join(',')}"`);
  return items.map(Number);
}

/** on/off (also 1/0, yes/no, true/false). */
export function envFlag(name: string, fallback: boolean): boolean {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|on|yes|true)$/i.test(raw)) return true;
  if (/^(0|off|no|false)$/i.test(raw)) return false;
  throw new Error(`${name} must be on or off, got "${raw}"`);
}

// ---- cores ----

export interface Pinning {
  /** Where the server under test runs; undefined when not pinned. */
  server: string | undefined;
  /** Where the load generator runs. */
  load: string | undefined;
  note: string;
}

/**
 * Pins this process (every thread: -a) to the load core and tells the caller how to start
 * servers on the other. Without taskset or with one core, nothing is pinned and the note says so.
 */
export function pinLoadGenerator(): Pinning {
  const cores = availableParallelism();
  const hasTaskset = spawnSync('taskset', ['--version'], { stdio: 'ignore' }).status === 0;
  if (!hasTaskset) return { server: undefined, load: undefined, note: 'taskset not found: server and load generator share all cores (numbers are noisier and lower)' };
  if (cores < 2) return { server: undefined, load: undefined, note: 'one core only: server and load generator share it' };
  const r = spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
  if (r.status !== 0) return { server: undefined, load: undefined, note: 'taskset could not pin this process: nothing pinned' };
  return { server: '0', load: '1', note: `server pinned to core 0, load generator to core 1 (taskset; ${cores} cores)` };
}

// ---- processes under test ----

export interface Server {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly pid: number;
  readonly url: string;
  readonly port: number;
  /** The inspector's WebSocket URL when started with inspect. */
  readonly inspector: string | undefined;
  /** Distinct warning and error lines the server logged after it started (at most 20). */
  warnings(): string[];
  stop(): Promise<void>;
}

export interface ServerSpec {
  name: string;
  /** Script and arguments for node. */
  args: string[];
  env?: Record<string, string | undefined>;
  pinning: Pinning;
  /** Start with the inspector on a free loopback port, for CPU profiles. */
  inspect?: boolean;
  /** Extra node flags. */
  nodeFlags?: string[];
  timeoutMs?: number;
}

/**
 * Starts a node process on the server core and waits for the line `... listening on http://...`.
 * With taskset, `taskset -c 0 node ...` execs node, so the pid is node's own.
 */
export function startServer(spec: ServerSpec): Promise<Server> {
  const nodeArgs = [...(spec.nodeFlags ?? []), ...(spec.inspect ? ['--inspect=127.0.0.1:0'] : []), ...spec.args];
  const [cmd, args] = spec.pinning.server !== undefined
    ? ['taskset', ['-c', spec.pinning.server, process.execPath, ...nodeArgs]]
    : [process.execPath, nodeArgs];
  const proc = spawn(cmd, args as string[], {
    cwd: ROOT,
    env: { ...process.env, ...spec.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((ok, fail) => {
    let out = '';
    let inspector: string | undefined;
    let done = false;
    const warnings = new Set<string>();
    let partial = '';
    const scan = (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (warnings.size < 20 && /"level":"(warn|error)"|\b(WARN|ERROR|Error)\b/.test(line) && !/Debugger|inspector|For help/.test(line)) {
          warnings.add(line.replace(/"time":"[^"]*",?/, '').slice(0, 300));
        }
      }
    };
    const timer = setTimeout(() => finish(new Error(`${spec.name} did not start within ${spec.timeoutMs ?? 60000} ms:\n${out}`)), spec.timeoutMs ?? 60000);
    const finish = (err?: Error, url?: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) {
        proc.kill('SIGKILL');
        return fail(err);
      }
      const port = Number(new URL(url!).port);
      const exited = new Promise<void>((r) => (proc.exitCode !== null ? r() : proc.once('exit', () => r())));
      ok({
        name: spec.name, proc, pid: proc.pid!, url: url!, port, inspector, warnings: () => [...warnings],
        stop: async () => {
          if (proc.exitCode !== null) return;
          proc.kill('SIGTERM');
          const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
          await exited;
          clearTimeout(t);
        },
      });
    };
    const onData = (chunk: Buffer) => {
      if (done) return scan(chunk.toString());
      out += chunk.toString();
      const ins = /Debugger listening on (ws:\/\/\S+)/.exec(out);
      if (ins) inspector = ins[1];
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m && (!spec.inspect || inspector)) finish(undefined, m[1].replace('0.0.0.0', '127.0.0.1'));
      if (out.length > 100_000) out = out.slice(-20_000);
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (c: Buffer) => {
      onData(c);
      if (done && process.env.BENCH_VERBOSE) process.stderr.write(`[${spec.name}] ${c}`);
    });
    proc.stdout!.on('data', (c: Buffer) => {
      if (done && process.env.BENCH_VERBOSE) process.stdout.write(`[${spec.name}] ${c}`);
    });
    proc.once('exit', (code) => finish(new Error(`${spec.name} exited with ${code} before listening:\n${out}`)));
  });
}

// ---- /proc ----

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim()) || 100;

/**
 * User + system CPU time of a process (all its threads), in microseconds: the sum of its threads'
 * run time in nanoseconds (/proc/<pid>/task/<tid>/schedstat) where the kernel has it, since
 * /proc/<pid>/stat counts in clock ticks (10 ms), too coarse for a one-second step; time of
 * threads that already exited is then missing, which a server in steady state does not have.
 */
export function cpuMicros(pid: number): number {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // the thread ended between the listing and the read
      }
    }
    if (ns > 0) return ns / 1000;
  } catch {
    // no schedstat: clock ticks below
  }
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command (which may hold spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1e6) / CLK_TCK;
}

/** Resident set size in bytes. */
/** VmRSS of a process in bytes, NaN once it is gone. */
export function rssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

export function sumCpuMicros(pids: readonly number[]): number {
  let sum = 0;
  for (const pid of pids) {
    try {
      sum += cpuMicros(pid);
    } catch {
      // the process went away: its time is lost, which only understates
    }
  }
  return sum;
}

/** Busy and total jiffies per CPU, from /proc/stat. */
export function coreTimes(): { busy: number; total: number }[] {
  const out: { busy: number; total: number }[] = [];
  try {
    for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
      const m = /^cpu(\d+) (.*)$/.exec(line);
      if (!m) continue;
      const v = m[2].trim().split(/\s+/).map(Number);
      const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
      out[Number(m[1])] = { busy: total - v[3] - v[4], total };
    }
  } catch {
    // not Linux
  }
  return out;
}

/** How busy each core was between two coreTimes() readings, in %. */
export function coreBusyPct(a: { busy: number; total: number }[], b: { busy: number; total: number }[]): number[] {
  return b.map((x, i) => (100 * (x.busy - (a[i]?.busy ?? 0))) / Math.max(1, x.total - (a[i]?.total ?? 0)));
}

/**
 * CPU used on the machine by anything but the given processes, in % of one core, between
 * two readings: other jobs on a shared machine make a measurement meaningless, so the
 * benchmarks wait for quiet before measuring and repeat a measurement that was disturbed.
 */
export class Noise {
  private cores = coreTimes();
  private ours: number;
  private at = performance.now();
  constructor(private readonly pids: () => number[]) {
    this.ours = this.own();
  }
  private own(): number {
    return sumCpuMicros(this.pids()) + cpuSelf();
  }
  /** Foreign CPU since construction, % of one core. */
  foreignPct(): number {
    const now = coreTimes();
    const wall = (performance.now() - this.at) / 1000;
    let busyJiffies = 0;
    for (let i = 0; i < now.length; i++) busyJiffies += now[i].busy - (this.cores[i]?.busy ?? 0);
    const busyUs = (busyJiffies * 1e6) / CLK_TCK;
    return Math.max(0, (100 * (busyUs - (this.own() - this.ours))) / (wall * 1e6));
  }
}

const cpuSelf = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** Waits (up to maxMs, BENCH_QUIET_MS) until other processes use less than `pct` % of a core over 300 ms. */
export async function waitQuiet(pids: () => number[], pct = 10, maxMs = envNumber('BENCH_QUIET_MS', 30_000)): Promise<number> {
  const until = performance.now() + maxMs;
  let last = NaN;
  let warned = false;
  for (;;) {
    const n = new Noise(pids);
    await sleep(300);
    last = n.foreignPct();
    if (last < pct || performance.now() > until) return last;
    if (!warned) {
      log(`waiting for other jobs on this machine to finish (${last.toFixed(0)}% of a core in use by others)`);
      warned = true;
    }
  }
}

// ---- statistics ----

/**
 * Latencies in microseconds: exact to 1 µs below 100 ms, 1 ms buckets up to 60 s.
 * Percentiles are the smallest value at or above that fraction of samples.
 */
export class Histogram {
  private fine = new Uint32Array(100_000);
  private coarse = new Uint32Array(60_000);
  count = 0;
  max = 0;
  sum = 0;

  recordMs(ms: number): void {
    this.recordMicros(Math.max(0, Math.round(ms * 1000)));
  }

  recordMicros(us: number): void {
    if (us < 100_000) this.fine[us]++;
    else this.coarse[Math.min(59_999, Math.floor(us / 1000))]++;
    this.count++;
    this.sum += us;
    if (us > this.max) this.max = us;
  }

  merge(o: Histogram): void {
    for (let i = 0; i < o.fine.length; i++) this.fine[i] += o.fine[i];
    for (let i = 0; i < o.coarse.length; i++) this.coarse[i] += o.coarse[i];
    this.count += o.count;
    this.sum += o.sum;
    this.max = Math.max(this.max, o.max);
  }

  /** Percentile in milliseconds. */
  pMs(p: number): number {
    if (this.count === 0) return NaN;
    const rank = Math.ceil((p / 100) * this.count);
    let seen = 0;
    for (let i = 0; i < this.fine.length; i++) {
      seen += this.fine[i];
      if (seen >= rank) return i / 1000;
    }
    for (let i = 0; i < this.coarse.length; i++) {
      seen += this.coarse[i];
      if (seen >= rank) return i;
    }
    return this.max / 1000;
  }

  reset(): void {
    this.fine.fill(0);
    this.coarse.fill(0);
    this.count = this.max = this.sum = 0;
  }

  /** Sparse form for sending between processes. */
  toJSON(): { f: [number, number][]; c: [number, number][]; n: number; max: number; sum: number } {
    const f: [number, number][] = [];
    const c: [number, number][] = [];
    this.fine.forEach((v, i) => v && f.push([i, v]));
    this.coarse.forEach((v, i) => v && c.push([i, v]));
    return { f, c, n: this.count, max: this.max, sum: this.sum };
  }

  static from(j: ReturnType<Histogram['toJSON']>): Histogram {
    const h = new Histogram();
    for (const [i, v] of j.f) h.fine[i] = v;
    for (const [i, v] of j.c) h.coarse[i] = v;
    h.count = j.n;
    h.max = j.max;
    h.sum = j.sum;
    return h;
  }
}

export const median = (xs: number[]): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// ---- output ----

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function fmt(n: number, digits = 0): string {
  if (!Number.isFinite(n)) return '–';
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function mdTable(head: string[], rows: (string | number)[][], align?: ('l' | 'r')[]): string {
  const a = align ?? head.map((_, i) => (i === 0 ? 'l' : 'r'));
  const line = (cells: (string | number)[]) => '| ' + cells.join(' | ') + ' |';
  return [line(head), line(a.map((x) => (x === 'l' ? '---' : '---:'))), ...rows.map(line)].join('\n');
}

export function writeResults(name: string, json: unknown, md: string): { json: string; md: string } {
  mkdirSync(RESULTS, { recursive: true });
  const j = join(RESULTS, `${name}.json`);
  const m = join(RESULTS, `${name}.md`);
  writeFileSync(j, JSON.stringify(json, null, 2) + '\n');
  writeFileSync(m, md + '\n');
  return { json: j, md: m };
}

/**
 * Runs a benchmark's main and exits with its code (0 when it returns none), or prints the error
 * and exits 1: a benchmark leaves child processes and timers behind that would keep it alive.
 */
export function runMain(name: string, main: () => Promise<number | void>): void {
  main().then(
    (code) => process.exit(code ?? 0),
    (err: Error) => {
      process.stderr.write(`${name} failed: ${err.stack ?? err.message}\n`);
      process.exit(1);
    },
  );
}

export function log(msg: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

export function machine(): Record<string, unknown> {
  let cpu = 'unknown';
  try {
    cpu = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpu;
  } catch {
    // not Linux
  }
  return { node: process.version, cores: availableParallelism(), cpu, platform: `${process.platform}-${process.arch}` };
}
