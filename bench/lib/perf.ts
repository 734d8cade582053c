/**
 * Linux `perf` samples of the server during a profiled window, when perf is installed and allowed:
 * V8's profiler cannot see native uWS code or the kernel, perf can. Summarised per binary
 * (kernel, uWS, node/V8, libc, JIT-compiled JavaScript) and per symbol.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { RESULTS, ROOT } from './paths.js';
import { SHARED } from './settings.js';

export interface PerfSummary {
  file: string;
  samples: number;
  /** Share of samples per binary, %. */
  binaries: { binary: string; pct: number }[];
  /** Top symbols by self samples, %. */
  top: { binary: string; symbol: string; pct: number }[];
}

export function perfAvailable(): boolean {
  if (!SHARED.perf) return false;
  if (spawnSync('perf', ['--version'], { stdio: 'ignore' }).status !== 0) return false;
  if (process.getuid?.() === 0) return true;
  try {
    return Number(readFileSync('/proc/sys/kernel/perf_event_paranoid', 'utf8')) <= 1;
  } catch {
    return false;
  }
}

/** Samples `pid` for `seconds`; resolves with the data file, or undefined if perf failed. */
export function perfRecord(pid: number, seconds: number, name: string): Promise<string | undefined> {
  const dir = join(RESULTS, 'profiles');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.perf.data`);
  return new Promise((done) => {
    const p = spawn('perf', ['record', '-q', '-F', '999', '-p', String(pid), '-o', file, '--', 'sleep', String(seconds)], { stdio: 'ignore' });
    p.on('exit', (code) => done(code === 0 && existsSync(file) ? file : undefined));
    p.on('error', () => done(undefined));
  });
}

const binaryName = (dso: string): string => {
  if (dso.includes('kernel')) return 'kernel';
  if (/uws_.*\.node/.test(dso)) return 'uWS (native)';
  if (dso === 'node' || dso.endsWith('/node')) return 'node/V8/libuv';
  if (/libc\.so|libstdc\+\+|libm\.so|ld-linux/.test(dso)) return 'libc/libstdc++';
  if (/JIT|perf-\d+\.map|\[unknown\]|unknown/.test(dso)) return 'JIT (JavaScript)';
  return dso;
};

function report(file: string, sort: string): { pct: number; cols: string[] }[] {
  const r = spawnSync('perf', ['report', '-i', file, '--stdio', '-q', '--sort', sort, '--percent-limit', '0.3', '-g', 'none'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return (r.stdout ?? '').split('\n').map((l) => /^\s*([\d.]+)%\s+(.*)$/.exec(l)).filter((m): m is RegExpExecArray => !!m)
    .map((m) => ({ pct: Number(m[1]), cols: m[2].split(/\s{2,}/).map((c) => c.trim()).filter(Boolean) }));
}

export function perfSummary(file: string): PerfSummary {
  const header = spawnSync('perf', ['report', '-i', file, '--stdio', '--header-only'], { encoding: 'utf8' }).stdout ?? '';
  const samples = Number(/sample(?:s)? ?: ?(\d+)|# Samples: (\d+)/.exec(header)?.slice(1).find(Boolean) ?? NaN);
  const binaries = new Map<string, number>();
  for (const row of report(file, 'dso')) binaries.set(binaryName(row.cols[0] ?? '?'), (binaries.get(binaryName(row.cols[0] ?? '?')) ?? 0) + row.pct);
  const top = report(file, 'dso,sym').slice(0, 15).map((row) => ({
    binary: binaryName(row.cols[0] ?? '?'),
    symbol: (row.cols.slice(1).join(' ').replace(/^\[[k.]\]\s*/, '') || '?').slice(0, 90),
    pct: row.pct,
  }));
  return {
    file: relative(ROOT, file), samples,
    binaries: [...binaries.entries()].sort((a, b) => b[1] - a[1]).map(([binary, pct]) => ({ binary, pct })),
    top,
  };
}

export function perfMarkdown(s: PerfSummary, topN = 8): string {
  const bins = s.binaries.slice(0, 6).map((b) => `${b.binary} ${b.pct.toFixed(0)}%`).join(', ');
  const top = s.top.slice(0, topN).map((t) => `${t.pct.toFixed(1)}% ${t.symbol} (${t.binary})`).join('; ');
  return `  - perf (all CPU incl. native and kernel; \`${s.file}\`): ${bins}\n  - perf top symbols: ${top}`;
}

/** Counts the process's socket-write system calls over `seconds` (perf stat on syscall tracepoints). */
export function perfCountSends(pid: number, seconds: number): Promise<number | undefined> {
  const events = ['sendto', 'sendmsg', 'write', 'writev'].map((e) => `syscalls:sys_enter_${e}`).join(',');
  return new Promise((done) => {
    const p = spawn('perf', ['stat', '-x', ',', '-e', events, '-p', String(pid), '--', 'sleep', String(seconds)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    p.on('exit', () => {
      const counts = err.split('\n').map((l) => Number(l.split(',')[0])).filter((n) => Number.isFinite(n));
      done(counts.length ? counts.reduce((a, b) => a + b, 0) : undefined);
    });
    p.on('error', () => done(undefined));
  });
}
