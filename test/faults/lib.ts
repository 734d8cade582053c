/**
 * Small pieces shared by the fault tests (test/faults/*.test.ts). Not a test
 * file itself: tap only runs `*.test.js`.
 */
import { readFileSync, readdirSync } from 'node:fs';
import type { Test } from 'tap';

export { eventually } from '../helpers/wait.js';

export interface Timed {
  /** HTTP status, or 0 when the request never got an answer (see `error`). */
  status: number;
  text: string;
  ms: number;
  error?: string;
  startedAt: number;
  endedAt: number;
}

/** One request with a hard bound: a request that hangs past `boundMs` comes back as status 0, error 'timeout'. */
export async function timedFetch(url: string, init: RequestInit, boundMs: number): Promise<Timed> {
  const startedAt = Date.now();
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(boundMs) });
    const text = await res.text();
    const endedAt = Date.now();
    return { status: res.status, text, ms: endedAt - startedAt, startedAt, endedAt };
  } catch (err) {
    const endedAt = Date.now();
    const e = err as { name?: string; cause?: { code?: string } };
    const error = e.name === 'TimeoutError' ? 'timeout' : String(e.cause?.code ?? err);
    return { status: 0, text: '', ms: endedAt - startedAt, error, startedAt, endedAt };
  }
}

export const postInit = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/**
 * Collects what the in-process service logs at error level (the test
 * service's logger writes JSON lines to stderr): a 500 or an unexpected
 * write failure is logged there.
 */
export function captureErrorLogs(t: Test): string[] {
  const seen: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    for (const line of text.split('\n')) if (line.includes('"level":"error"')) seen.push(line);
    return (write as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write;
  t.teardown(() => {
    process.stderr.write = write;
  });
  return seen;
}

/** Pids of the processes whose parent is `pid` (from /proc). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** A process is gone once /proc no longer lists it or it is a zombie waiting to be reaped. */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

export const mb = (bytes: number): string => `${(bytes / 1048576).toFixed(1)} MB`;
