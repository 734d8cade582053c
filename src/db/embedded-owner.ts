/**
 * Who holds an embedded Postgres data folder. A server outlives its starter
 * when that is killed (SIGKILL, OOM): the record beside postmaster.pid lets
 * the next start tell such an orphan from a server a live process is using.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Backoff, sleep } from '../lib/retry.js';
import { EmbeddedError } from './embedded-process.js';

export interface Owner {
  /** The process that started the server and will stop it. */
  readonly pid: number;
  /** A service's server may be reached by the CLIs; a CLI's lasts only for its run. */
  readonly kind: 'service' | 'cli';
  /** The owner in the words a user knows it by: `npm start`, `npm run key`. */
  readonly command: string;
  /** The postmaster it started: a record naming another one is stale. */
  readonly postgresPid: number;
}

export type Holder =
  | { readonly state: 'free' }
  /** Its owner is gone, so nobody would ever stop it. */
  | { readonly state: 'orphan'; readonly pid: number; readonly owner: Owner }
  /** Running with no record of who started it. */
  | { readonly state: 'unknown'; readonly pid: number }
  | { readonly state: 'held'; readonly pid: number; readonly port: number; readonly owner: Owner };

const OWNER_FILE = 'embedded-owner.json';
const STOP_WAIT_MS = 30_000;

/**
 * Whether pid is a running process (a zombie is not) and, where /proc tells,
 * that it is `name`: a pid read from a file may since have been reused.
 */
function isRunning(pid: number, name?: string): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (existsSync('/proc/self/stat')) {
    try {
      const m = /^\d+ \((.*)\) (\S)/s.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      return m !== null && m[2] !== 'Z' && (name === undefined || m[1] === name);
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(dataDir: string): Owner | undefined {
  try {
    return JSON.parse(readFileSync(join(dataDir, OWNER_FILE), 'utf8')) as Owner;
  } catch {
    return undefined;
  }
}

export function writeOwner(dataDir: string, owner: Owner): void {
  writeFileSync(join(dataDir, OWNER_FILE), JSON.stringify(owner) + '\n');
}

/** Removes the record if it is still this process's for that postmaster. */
export function clearOwner(dataDir: string, postgresPid: number): void {
  const owner = readOwner(dataDir);
  if (owner?.pid === process.pid && owner.postgresPid === postgresPid) rmSync(join(dataDir, OWNER_FILE), { force: true });
}

/** postmaster.pid holds the postmaster's pid on its first line and its port on the fourth. */
export function inspect(dataDir: string): Holder {
  let lines: string[];
  try {
    lines = readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return { state: 'free' };
  }
  const pid = Number(lines[0]);
  if (!isRunning(pid, 'postgres')) return { state: 'free' };
  const owner = readOwner(dataDir);
  if (owner?.postgresPid !== pid) return { state: 'unknown', pid };
  // A record naming this very process is from an earlier life under the same pid (a container restart).
  if (owner.pid === process.pid || !isRunning(owner.pid)) return { state: 'orphan', pid, owner };
  return { state: 'held', pid, port: Number(lines[3]) || 0, owner };
}

/**
 * Stops a server left behind, with a fast shutdown (sessions end, data is
 * checkpointed), and waits until postmaster.pid is gone or the process is.
 */
export async function stopOrphan(dataDir: string, pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  const backoff = new Backoff(20, 500);
  const until = Date.now() + STOP_WAIT_MS;
  while (inspect(dataDir).state !== 'free') {
    if (Date.now() > until) {
      throw new EmbeddedError(`the Postgres left running in ${dataDir} (pid ${pid}) did not stop within ${STOP_WAIT_MS / 1000} s: stop it (kill ${pid}) and start again`);
    }
    await sleep(backoff.next());
  }
}
