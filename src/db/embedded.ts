import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from '../log.js';
import { clearOwner, inspect, stopOrphan, writeOwner, type Holder, type Owner } from './embedded-owner.js';
import { EmbeddedError, binaries, initialise, startPostgres } from './embedded-process.js';
import { pendingPassword, readPassword, settlePassword } from './embedded-password.js';
import { checkReachable, runAs } from './embedded-root.js';
import { Keeper, RESTARTS } from './embedded-keeper.js';
import { freePort } from '../lib/free-port.js';

export { EmbeddedError } from './embedded-process.js';

export interface EmbeddedServer {
  readonly url: string;
  /** Why it is down for good (its restarts ran out); undefined while it runs or is being restarted. */
  failed(): string | undefined;
  stop(): Promise<void>;
}

interface StartedBy {
  readonly kind: Owner['kind'];
  /** How a user knows it, for messages: `npm start`, `npm run key`. */
  readonly command: string;
  /**
   * It stops the server itself on SIGINT and SIGTERM, after its own shutdown.
   * The server then runs in a process group of its own, so a Ctrl-C (sent to
   * the terminal's whole group) does not stop Postgres under the draining service.
   */
  readonly stopsOnSignal?: boolean;
  /** It relies on the server for as long as it runs, so a server that dies is started again. */
  readonly restarts?: boolean;
}

const SERVICE: StartedBy = { kind: 'service', command: 'the service' };

const urlFor = (port: number, password: string) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;

function inUse(dataDir: string, holder: Exclude<Holder, { state: 'free' | 'orphan' }>): EmbeddedError {
  if (holder.state === 'unknown') {
    return new EmbeddedError(`a Postgres (pid ${holder.pid}) not started by this project already runs on ${dataDir}: `
      + `stop it (kill -INT ${holder.pid}) and start again, or set EMBEDDED_PG_DIR to another folder`);
  }
  const { command, pid, kind } = holder.owner;
  return new EmbeddedError(`the embedded Postgres in ${dataDir} is in use by ${command} (pid ${pid}): `
    + (kind === 'cli' ? 'it stops it when it ends; try again once it has finished' : 'stop that first, or set EMBEDDED_PG_DIR to another folder'));
}

/**
 * A real Postgres in a folder of the project, for `npm start`, `npm test`
 * and the CLIs on a machine with no database. It listens on loopback only, on
 * a port of its own (never 5432, which a system Postgres may hold). Every
 * failure is an EmbeddedError saying what happened and what to do.
 */
export async function startEmbedded(dir: string, port: number, log: Logger, by: StartedBy = SERVICE): Promise<EmbeddedServer> {
  const dataDir = resolve(dir);
  const holder = inspect(dataDir);
  if (holder.state === 'held' || holder.state === 'unknown') throw inUse(dataDir, holder);
  if (holder.state === 'orphan') {
    // Stopped and started again rather than adopted: its output goes to a
    // pipe nobody reads, it runs with its dead starter's port and settings,
    // and only a child of this process is stopped in order at shutdown. A
    // fast shutdown is safe for the data and takes well under a second.
    log.warn('stopping the embedded postgres left running by a process that is gone', { pid: holder.pid, owner: holder.owner.pid, by: holder.owner.command });
    await stopOrphan(dataDir, holder.pid);
  }
  const bins = await binaries();
  const who = await runAs();
  await mkdir(dirname(dataDir), { recursive: true });
  await checkReachable(bins, dataDir, who);
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    log.info('initialising embedded postgres', { dir: dataDir });
    await initialise(bins, dataDir, who, log, (await pendingPassword(dataDir, who)).file);
  }
  const known = await readPassword(dataDir);
  const chosen = port || (await freePort());
  let postgresPid = 0;
  const keeper = new Keeper((died) => startPostgres(bins, dataDir, chosen, who, by.stopsOnSignal ?? false, log, (pid) => {
    postgresPid = pid;
    writeOwner(dataDir, { pid: process.pid, kind: by.kind, command: by.command, postgresPid: pid });
  }, died), log, by.restarts ? RESTARTS : undefined);
  await keeper.start().catch((err: unknown) => {
    clearOwner(dataDir, postgresPid);
    throw err;
  });
  log.info('embedded postgres started', { port: chosen, dir: dataDir });
  let password: string;
  try {
    password = known ?? (await settlePassword(dataDir, chosen, who, log));
  } catch (err) {
    await keeper.stop();
    clearOwner(dataDir, postgresPid);
    throw err;
  }
  return {
    url: urlFor(chosen, password),
    failed: () => keeper.failed,
    stop: async () => {
      await keeper.stop();
      clearOwner(dataDir, postgresPid);
      log.info('embedded postgres stopped');
    },
  };
}

/**
 * Deletes the embedded data folder, for a start from a clean demo. A server
 * still running on it is stopped first when its owner is gone, and refused
 * otherwise; a folder that is not a Postgres data folder is never deleted, so
 * a mistyped EMBEDDED_PG_DIR cannot wipe anything else.
 */
export async function wipeEmbedded(dir: string, log: Logger): Promise<void> {
  const dataDir = resolve(dir);
  if (!existsSync(dataDir)) return;
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    throw new EmbeddedError(`--fresh would delete ${dataDir}, which is not a Postgres data folder (no PG_VERSION): delete it yourself, or set EMBEDDED_PG_DIR to the embedded data folder`);
  }
  const holder = inspect(dataDir);
  if (holder.state === 'held' || holder.state === 'unknown') throw inUse(dataDir, holder);
  if (holder.state === 'orphan') await stopOrphan(dataDir, holder.pid);
  await rm(dataDir, { recursive: true, force: true });
  log.info('embedded postgres data deleted for a fresh start', { dir: dataDir });
}

/** The embedded Postgres a CLI reached, and which it is, in words for its user. */
export interface ReachedServer extends EmbeddedServer {
  readonly where: string;
}

/**
 * For a CLI with no DATABASE_URL: the embedded Postgres a running service
 * holds on the folder, reached and left running; otherwise one started for
 * the CLI's run, stopped by `stop`. With `create` false (a command that only
 * reads), a folder holding no server yet is refused rather than made.
 */
export async function reachEmbedded(dir: string, port: number, log: Logger, command: string, create = true): Promise<ReachedServer> {
  const dataDir = resolve(dir);
  const holder = inspect(dataDir);
  if (holder.state !== 'held' || holder.owner.kind !== 'service') {
    if (!create && !existsSync(join(dataDir, 'PG_VERSION'))) {
      throw new EmbeddedError(`there is no embedded Postgres in ${dataDir} (EMBEDDED_PG_DIR), so nothing to read: set EMBEDDED_PG_DIR to the folder the service uses, or DATABASE_URL to its database`);
    }
    const started = await startEmbedded(dir, port, log, { kind: 'cli', command });
    return { ...started, where: `the embedded Postgres in ${dataDir}, started for this command (no service runs on it)` };
  }
  if (!holder.port) throw new EmbeddedError(`${holder.owner.command} (pid ${holder.owner.pid}) is still starting the embedded Postgres in ${dataDir}: try again in a moment`);
  const password = await readPassword(dataDir);
  if (!password) throw new EmbeddedError(`${holder.owner.command} (pid ${holder.owner.pid}) has not yet written the password of the embedded Postgres in ${dataDir}: try again in a moment`);
  log.info('using the embedded postgres of the running service', { pid: holder.owner.pid, port: holder.port });
  return {
    url: urlFor(holder.port, password), failed: () => undefined, stop: async () => undefined,
    where: `the embedded Postgres in ${dataDir} of the running service (${holder.owner.command}, pid ${holder.owner.pid})`,
  };
}
