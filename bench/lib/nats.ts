/**
 * A NATS server of the benchmark's own (Debian's nats-server, with JetStream, which the service's
 * NATS bus needs), in a temporary folder and on a free port: no subject, stream or CPU of anyone
 * else's on the machine's NATS mixes into what is measured, and its pid is known, so its CPU can
 * be read. With a pinning, it runs on the server core, beside the pods it joins.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/lib/free-port.js';
import { type Pinning } from './cores.js';
import { sleep } from './run.js';

export const NATS_BINARY = ['/usr/sbin/nats-server', '/usr/bin/nats-server'].find((p) => existsSync(p));

export interface Nats {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

const reachable = (port: number) => new Promise<boolean>((ok) => {
  const s = connect(port, '127.0.0.1', () => (s.destroy(), ok(true)));
  s.on('error', () => ok(false));
});

export async function startNats(pinning?: Pinning): Promise<Nats> {
  if (!NATS_BINARY) throw new Error('this benchmark needs Debian\'s nats-server (apt-get install nats-server)');
  const dir = await mkdtemp(join(tmpdir(), 'odds-bench-nats-'));
  const port = await freePort();
  const args = ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir];
  const child: ChildProcess = pinning?.server !== undefined ? spawn('taskset', ['-c', pinning.server, NATS_BINARY, ...args], { stdio: 'ignore' }) : spawn(NATS_BINARY, args, { stdio: 'ignore' });
  for (let i = 0; i < 100 && !(await reachable(port)); i++) await sleep(50);
  const exited = new Promise<void>((r) => (child.exitCode !== null ? r() : child.once('exit', () => r())));
  return {
    url: `nats://127.0.0.1:${port}`, pid: child.pid!,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
