/**
 * Run as root, the embedded Postgres runs as the system user `postgres`
 * (Postgres refuses root), which must reach the binaries and the data folder.
 */
import { execFile } from 'node:child_process';
import { realpath, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { EmbeddedError, type Binaries, type RunAs } from './embedded-process.js';

const execFileAsync = promisify(execFile);

/** The user Postgres runs as: `postgres` when this process is root, created when missing. */
export async function runAs(): Promise<RunAs> {
  if (process.getuid?.() !== 0) return {};
  const lookup = async () => {
    const [uid, gid] = await Promise.all([execFileAsync('id', ['-u', 'postgres']), execFileAsync('id', ['-g', 'postgres'])]);
    return { uid: Number(uid.stdout), gid: Number(gid.stdout) };
  };
  try {
    return await lookup();
  } catch {
    // no such user yet
  }
  try {
    await execFileAsync('groupadd', ['-f', 'postgres']);
    await execFileAsync('useradd', ['-g', 'postgres', 'postgres']);
    return await lookup();
  } catch (err) {
    const said = String((err as { stderr?: string }).stderr || (err as Error).message).trim();
    throw new EmbeddedError(`run as root, the embedded Postgres runs as the system user "postgres", and creating that user failed (${said}): create it, or set DATABASE_URL to a Postgres server`);
  }
}

/** Every folder from the root down to `dir`, as written and with symbolic links resolved. */
async function foldersDownTo(dir: string): Promise<string[]> {
  const chain = (d: string): string[] => (d === dirname(d) ? [d] : [...chain(dirname(d)), d]);
  return [...new Set([...chain(dir), ...chain(await realpath(dir))])];
}

/**
 * The folders on the way to `dir` that `who` may not enter. Mode bits decide
 * exactly: a spawn with a uid drops the supplementary groups.
 */
async function barriers(dir: string, who: RunAs): Promise<string[]> {
  const out: string[] = [];
  for (const d of await foldersDownTo(dir)) {
    const s = await stat(d);
    const bits = s.uid === who.uid ? s.mode >> 6 : s.gid === who.gid ? s.mode >> 3 : s.mode;
    if (!(bits & 1)) out.push(d);
  }
  return out;
}

/** Fails, naming the folder, when the `postgres` user could not reach the binaries or the data folder. */
export async function checkReachable(bins: Binaries, dataDir: string, who: RunAs): Promise<void> {
  if (who.uid === undefined) return;
  const user = 'run as root, the embedded Postgres runs as the system user "postgres"';
  const toBinaries = await barriers(dirname(bins.postgres), who);
  if (toBinaries.length) {
    throw new EmbeddedError(`${user}, which cannot enter ${toBinaries[0]} on the way to its binaries in node_modules: `
      + `set DATABASE_URL to a Postgres server, or run chmod o+x ${toBinaries.join(' ')}`);
  }
  const toData = await barriers(dirname(dataDir), who);
  if (toData.length) {
    throw new EmbeddedError(`${user}, which cannot enter ${toData[0]} on the way to its data folder ${dataDir}: `
      + `set DATABASE_URL to a Postgres server, set EMBEDDED_PG_DIR to a folder it can reach, or run chmod o+x ${toData.join(' ')}`);
  }
}
