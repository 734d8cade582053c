/**
 * A Postgres of the test's own (as in test/db/outage.test.ts), for faults that
 * would break every other file on the suite's shared server: freezing every
 * one of its processes with SIGSTOP (a hung host, a stalled disk), stopping
 * it, starting it again. Not a test file itself.
 */
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { startEmbedded, type EmbeddedServer } from '../../src/db/embedded.js';
import { createLogger } from '../../src/log.js';
import { freePort } from '../helpers/net.js';
import { childrenOf } from './lib.js';

export interface OwnPostgres {
  readonly url: string;
  /** SIGSTOPs the postmaster and every process it started: connections stay open and nothing answers. */
  freeze(): void;
  /** SIGCONTs whatever freeze() stopped. */
  thaw(): void;
  /** A clean stop: connections are closed and new ones refused. */
  stop(): Promise<void>;
  start(): Promise<void>;
}

const signal = (pid: number, sig: NodeJS.Signals): void => {
  try {
    process.kill(pid, sig);
  } catch {
    // gone meanwhile
  }
};

/** Starts one; it is thawed and stopped when the test ends, after anything registered later (tap runs teardowns last first). */
export async function ownPostgres(t: Test): Promise<OwnPostgres> {
  const log = createLogger('error', false, (l) => process.stderr.write(l));
  const root = await mkdtemp(join(tmpdir(), 'odds-own-pg-'));
  await chmod(root, 0o755); // the embedded server runs as the postgres user when tests run as root
  const dir = join(root, 'pg');
  const port = await freePort();
  let server: EmbeddedServer | undefined = await startEmbedded(dir, port, log);
  const url = server.url;
  let stopped: number[] = [];

  const own: OwnPostgres = {
    url,
    freeze() {
      const postmaster = Number(readFileSync(join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      // The postmaster first, so it starts no process after its children were listed.
      signal(postmaster, 'SIGSTOP');
      stopped = [postmaster];
      for (const pid of childrenOf(postmaster)) {
        signal(pid, 'SIGSTOP');
        stopped.push(pid);
      }
    },
    thaw() {
      for (const pid of stopped.reverse()) signal(pid, 'SIGCONT');
      stopped = [];
    },
    async stop() {
      const s = server;
      server = undefined;
      await s?.stop();
    },
    async start() {
      server ??= await startEmbedded(dir, port, log);
    },
  };
  t.teardown(async () => {
    own.thaw();
    await own.stop();
    await rm(root, { recursive: true, force: true });
  });
  return own;
}
