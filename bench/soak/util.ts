/**
 * Small pieces of the soak run: a lock, a least-squares slope, the Prometheus text parser, and
 * what /proc says about the service process (resident memory, open sockets).
 */
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

export { rssBytes } from '../lib/proc.js';
export { sleep } from '../lib/run.js';

export const MB = 1024 * 1024;

/** Progress and problems go to stderr; the sample table and the verdict to stdout. */
export function log(msg: string): void {
  process.stderr.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

export function fmt(n: number, digits = 0): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '-';
}

/**
 * One holder at a time, in arrival order. Pool churn, subscription changes and the 10 s samples
 * take it, so a sample compares the server's counts with what the load generator holds when no
 * socket is half-open or half-subscribed.
 */
export class Lock {
  private tail: Promise<void> = Promise.resolve();

  async run<T>(fn: () => Promise<T>): Promise<T> {
    const before = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((r) => (release = r));
    await before;
    try {
      return await fn();
    } finally {
      release();
    }
  }
}

/** Least-squares slope of y over x. NaN with fewer than two distinct x. */
export function slope(xs: readonly number[], ys: readonly number[]): number {
  const n = xs.length;
  if (n < 2) return NaN;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my);
    sxx += (xs[i] - mx) ** 2;
  }
  return sxx === 0 ? NaN : sxy / sxx;
}

// ---- Prometheus text ----

import type { Scrape } from '../../test/helpers/prometheus.js';

// The parser the tests use: one reading of the exposition format for both.
export { parseMetrics, type Scrape } from '../../test/helpers/prometheus.js';

/** Sum of every series of a metric whose labels pass `keep` (all of them by default). */
export function total(s: Scrape, name: string, keep: (labels: string) => boolean = () => true): number {
  let sum = 0;
  for (const [key, v] of s) {
    if (key === name) sum += keep('') ? v : 0;
    else if (key.startsWith(name + '{') && keep(key.slice(name.length))) sum += v;
  }
  return sum;
}

export const label = (name: string, value: string) => (labels: string): boolean => labels.includes(`${name}="${value}"`);

// ---- /proc ----

/** Open file descriptors of a process, and how many of them are sockets. */
export function fdCounts(pid: number): { fds: number; sockets: number } {
  let fds = 0;
  let sockets = 0;
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      fds++;
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) sockets++;
      } catch {
        // closed between the listing and the readlink
      }
    }
  } catch {
    return { fds: NaN, sockets: NaN };
  }
  return { fds, sockets };
}

/** This process's soft limit on open files, from /proc (Node has no getrlimit). */
export function openFileLimit(): number {
  try {
    const m = /Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : Infinity;
  } catch {
    return Infinity;
  }
}

// ---- problems ----

/**
 * What went wrong on the load generator's side of the wire: unexpected statuses, refused
 * batches, transport errors, sockets closed by the server. Counted per kind, with the first
 * few details kept for the report.
 */
export class Problems {
  readonly counts = new Map<string, number>();
  readonly examples: string[] = [];

  note(kind: string, detail: string): void {
    const n = (this.counts.get(kind) ?? 0) + 1;
    this.counts.set(kind, n);
    if (n <= 3 && this.examples.length < 30) {
      this.examples.push(`${kind}: ${detail}`);
      log(`problem: ${kind}: ${detail}`);
    }
  }

  get total(): number {
    let n = 0;
    for (const v of this.counts.values()) n += v;
    return n;
  }

  toJSON(): { counts: Record<string, number>; examples: string[] } {
    return { counts: Object.fromEntries(this.counts), examples: this.examples };
  }
}

// ---- random picks for the load ----

export const rnd = (n: number): number => Math.floor(Math.random() * n);
export const pickOne = <T>(xs: readonly T[]): T => xs[rnd(xs.length)];
/** k distinct elements (all of them when k >= length). */
export function pickSome<T>(xs: readonly T[], k: number): T[] {
  const copy = [...xs];
  const out: T[] = [];
  while (out.length < k && copy.length) out.push(copy.splice(rnd(copy.length), 1)[0]);
  return out;
}
export const round2 = (x: number): number => Math.round(x * 100) / 100;
