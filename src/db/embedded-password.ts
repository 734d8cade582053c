/**
 * The embedded Postgres's superuser password. A fixed one would let any local
 * process (or a page of another site reaching the port through a browser)
 * log in as superuser and, say, insert an admin key. So it is random, kept in
 * the data folder in a file only its owner (the user Postgres runs as) may
 * read, and read from there by the service and by the CLIs that reach a
 * running service's server.
 *
 * Folders made before had the password `postgres`. A start that finds no
 * password file logs in with that, sets a random one and only then writes the
 * file. The new password is written beside the folder first (`<dir>.password`),
 * so a start killed half-way leaves the password it may have set behind, and
 * the next start tries it.
 */
import { randomBytes } from 'node:crypto';
import { chown, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import type { Logger } from '../log.js';
import { EmbeddedError, type RunAs } from './embedded-process.js';

export const PASSWORD_FILE = 'superuser-password';
/** The password of folders initialised before this file existed. */
const LEGACY = 'postgres';
/** Postgres's code for a failed password check. */
const BAD_PASSWORD = '28P01';

const pendingFile = (dataDir: string): string => `${dataDir}.password`;

async function readTrimmed(file: string): Promise<string | undefined> {
  try {
    return (await readFile(file, 'utf8')).trim() || undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The folder's password, or undefined when it has none yet; an unreadable file says whose it is. */
export async function readPassword(dataDir: string): Promise<string | undefined> {
  const file = join(dataDir, PASSWORD_FILE);
  try {
    return await readTrimmed(file);
  } catch (err) {
    throw new EmbeddedError(`cannot read the embedded Postgres password in ${file} (${(err as Error).message}): run as the user that runs the service, or set DATABASE_URL`);
  }
}

/**
 * The password a start is about to give the folder: the one a start left
 * pending, or a new one, written beside the folder (mode 0600, owned by the
 * user Postgres runs as) for initdb to read. Returns it and where it is.
 */
export async function pendingPassword(dataDir: string, who: RunAs): Promise<{ password: string; file: string }> {
  const file = pendingFile(dataDir);
  const left = await readTrimmed(file);
  if (left) return { password: left, file };
  const password = randomBytes(24).toString('hex');
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  if (who.uid !== undefined) await chown(file, who.uid, who.gid!);
  return { password, file };
}

/** Whether `password` logs in; if so, runs `then` on that connection. */
async function tryLogin(port: number, password: string, then: (c: pg.Client) => Promise<unknown>): Promise<boolean> {
  const c = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres', connectionTimeoutMillis: 10_000 });
  try {
    await c.connect();
  } catch (err) {
    await c.end().catch(() => undefined);
    if ((err as { code?: string }).code === BAD_PASSWORD) return false;
    throw err;
  }
  try {
    await then(c);
    return true;
  } finally {
    await c.end();
  }
}

/**
 * For a running server whose folder has no password file: logs in with the
 * pending password (a start that set it and stopped) or the old fixed one,
 * sets the pending one, and moves its file into the folder.
 */
export async function settlePassword(dataDir: string, port: number, who: RunAs, log: Logger): Promise<string> {
  const { password, file } = await pendingPassword(dataDir, who);
  const already = await tryLogin(port, password, async () => undefined);
  // Hex only, so it is safe inside the quotes: ALTER USER takes no parameters.
  if (!already && !(await tryLogin(port, LEGACY, (c) => c.query(`ALTER USER postgres PASSWORD '${password}'`)))) {
    throw new EmbeddedError(`the embedded Postgres in ${dataDir} has no ${PASSWORD_FILE} file and takes neither the password in ${file} nor the old default: `
      + `write its superuser password into ${join(dataDir, PASSWORD_FILE)} (mode 0600), or set DATABASE_URL`);
  }
  if (!already) log.warn('the embedded postgres had the fixed password "postgres"; it now has a random one', { file: join(dataDir, PASSWORD_FILE) });
  await rename(file, join(dataDir, PASSWORD_FILE));
  return password;
}
