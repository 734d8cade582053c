/**
 * CPU profiles of the service under load, taken through the inspector (the service is started
 * with --inspect on a loopback port) so each profile covers exactly one load window, and a
 * bottom-up summary: self time per function and per source file.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import WebSocket from 'ws';
import { RESULTS, ROOT } from './paths.js';
import { perfMarkdown, type PerfSummary } from './perf.js';

interface CallFrame { functionName: string; url: string; lineNumber: number; columnNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
export interface CpuProfile { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] }

export class Inspector {
  private ws: WebSocket;
  private next = 1;
  private waiting = new Map<number, { ok: (v: unknown) => void; fail: (e: Error) => void }>();
  private opened: Promise<void>;

  constructor(url: string) {
    this.ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 1024 * 1024 * 1024 });
    this.opened = new Promise((ok, fail) => {
      this.ws.once('open', () => ok());
      this.ws.once('error', fail);
    });
    this.ws.on('message', (data) => {
      const msg = JSON.parse(data.toString()) as { id?: number; result?: unknown; error?: { message: string } };
      const w = msg.id !== undefined ? this.waiting.get(msg.id) : undefined;
      if (!w) return;
      this.waiting.delete(msg.id!);
      if (msg.error) w.fail(new Error(msg.error.message));
      else w.ok(msg.result);
    });
  }

  async call<T = unknown>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    await this.opened;
    const id = this.next++;
    return new Promise<T>((ok, fail) => {
      this.waiting.set(id, { ok: ok as (v: unknown) => void, fail });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  async start(intervalUs = 250): Promise<void> {
    await this.call('Profiler.enable');
    await this.call('Profiler.setSamplingInterval', { interval: intervalUs });
    await this.call('Profiler.start');
  }

  async stop(): Promise<CpuProfile> {
    const { profile } = await this.call<{ profile: CpuProfile }>('Profiler.stop');
    return profile;
  }

  close(): void {
    this.ws.close();
  }
}

export interface ProfileSummary {
  file: string;
  /** What the profiled window was. */
  window: string;
  /** CPU time of the process in the window (/proc), ms. */
  processCpuMs: number;
  /** Share of that CPU time the sampler saw in JavaScript, GC and V8 (the rest is native uWS and the kernel, which V8 samples as idle). */
  sampledPct: number;
  /** Top functions by self time, as % of the process's CPU time. */
  top: { fn: string; where: string; selfPct: number; selfMs: number }[];
  /** Self time per source area (a file of src/, a package, node internals, GC), as % of the process's CPU time. */
  areas: { area: string; selfPct: number }[];
  /** The same window seen by Linux perf, when available. */
  perf?: PerfSummary;
  /** Frames written per send/write system call in the window (fan-out only). */
  framesPerSyscall?: number;
}

function where(cf: CallFrame): string {
  if (!cf.url) return '';
  let u = cf.url.replace(/^file:\/\//, '');
  if (u.startsWith('/')) u = relative(ROOT, u);
  return `${u}:${cf.lineNumber + 1}`;
}

function area(cf: CallFrame): string {
  if (cf.functionName === '(garbage collector)') return 'GC';
  if (cf.functionName === '(program)') return 'native (uWS C++, V8, syscalls)';
  if (!cf.url) return cf.functionName.startsWith('(') ? cf.functionName : 'native builtins';
  const u = cf.url.replace(/^file:\/\//, '');
  if (u.startsWith('node:')) return 'node internals';
  const rel = u.startsWith('/') ? relative(ROOT, u) : u;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(rel);
  if (pkg) return `npm ${pkg[1]}`;
  return rel.replace(/^dist\//, '').replace(/\.js$/, '.ts');
}

/**
 * Saves the profile (open it in Chrome DevTools) and summarises where the time went. uWS runs its
 * native code (HTTP parsing, socket writes, pub/sub) inside libuv's poll phase, which Node marks
 * idle for the profiler, so only JavaScript, GC and V8 show up as busy samples: everything is
 * therefore expressed against the process's CPU time read from /proc for the same window, and
 * what the sampler did not see is reported as "native uWS + kernel".
 */
export function summarise(profile: CpuProfile, name: string, window: string, processCpuUs: number, topN = 12): ProfileSummary {
  const dir = join(RESULTS, 'profiles');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}.cpuprofile`);
  writeFileSync(file, JSON.stringify(profile));

  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i + 1] ?? 0;
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt);
  }
  let sampled = 0;
  const fns = new Map<string, { fn: string; where: string; us: number }>();
  const areas = new Map<string, number>();
  for (const [id, us] of self) {
    const cf = byId.get(id)!.callFrame;
    if (cf.functionName === '(idle)') continue;
    sampled += us;
    const w = where(cf);
    const key = `${cf.functionName}@${w}`;
    const e = fns.get(key) ?? { fn: cf.functionName || '(anonymous)', where: w, us: 0 };
    e.us += us;
    fns.set(key, e);
    const a = area(cf);
    areas.set(a, (areas.get(a) ?? 0) + us);
  }
  const cpu = Math.max(processCpuUs, sampled) || 1;
  areas.set('native uWS + kernel (not sampled)', cpu - sampled);
  return {
    file: relative(ROOT, file),
    window,
    processCpuMs: cpu / 1000,
    sampledPct: (100 * sampled) / cpu,
    top: [...fns.values()].sort((a, b) => b.us - a.us).slice(0, topN)
      .map((e) => ({ fn: e.fn, where: e.where, selfPct: (100 * e.us) / cpu, selfMs: e.us / 1000 })),
    areas: [...areas.entries()].sort((a, b) => b[1] - a[1]).slice(0, 10).map(([a, us]) => ({ area: a, selfPct: (100 * us) / cpu })),
  };
}

export function profileMarkdown(title: string, s: ProfileSummary, topN = 8): string {
  const top = s.top.slice(0, topN).map((t) => `${t.selfPct.toFixed(1)}% ${t.fn}${t.where ? ` (${t.where})` : ''}`).join('; ');
  const areas = s.areas.slice(0, 7).map((a) => `${a.area} ${a.selfPct.toFixed(0)}%`).join(', ');
  return `- **${title}**: ${s.window}; \`${s.file}\`\n  - V8 profile, by area (% of the process's CPU time): ${areas}\n  - V8 top self time: ${top}` +
    (s.perf ? '\n' + perfMarkdown(s.perf) : '') +
    (s.framesPerSyscall ? `\n  - ${s.framesPerSyscall.toFixed(2)} frames per socket write system call` : '');
}
