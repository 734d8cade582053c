import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { freePort } from './net.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';

/** Where Debian's nats-server is, if it is installed (.ci/run installs it). */
export const NATS_BINARY = ['/usr/sbin/nats-server', '/usr/bin/nats-server', 'nats-server'].find((b) => spawnSync(b, ['--version']).status === 0);

async function reachable(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const s = connect(port, '127.0.0.1', () => { s.destroy(); ok(true); });
    s.on('error', () => ok(false));
  });
}

/**
 * A NATS server of the test's own, with JetStream, so it can be stopped and
 * started again without touching anyone else's.
 */
export class NatsServer {
  private child: ChildProcess | undefined;

  private constructor(readonly port: number, private readonly dir: string) {}

  static async start(t: Test): Promise<NatsServer> {
    const dir = await mkdtemp(join(tmpdir(), 'odds-nats-'));
    const server = new NatsServer(await freePort(), dir);
    t.teardown(async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    });
    await server.resume();
    return server;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  async resume(): Promise<void> {
    this.child = spawn(NATS_BINARY!, ['-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', this.dir], { stdio: 'ignore' });
    for (let i = 0; i < 100 && !(await reachable(this.port)); i++) await new Promise((r) => setTimeout(r, 50));
  }

  /** Stops the server, throws its store away and starts it again: a NATS that comes back empty. */
  async reset(): Promise<void> {
    await this.stop();
    await rm(this.dir, { recursive: true, force: true });
    await this.resume();
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    const gone = new Promise((ok) => child.once('exit', ok));
    child.kill('SIGTERM');
    await gone;
  }
}
