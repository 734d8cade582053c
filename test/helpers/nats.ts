import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { freePort } from './net.js';
import { waitFor } from './wait.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { findRoot } from '../k8s/root.js';

/** Where Debian's nats-server is, if it is installed (.ci/run installs it). */
export const NATS_BINARY = ['/usr/sbin/nats-server', '/usr/bin/nats-server', 'nats-server'].find((b) => spawnSync(b, ['--version']).status === 0);

async function reachable(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const s = connect(port, '127.0.0.1', () => { s.destroy(); ok(true); });
    s.on('error', () => ok(false));
  });
}

export interface NatsServerOptions {
  /** A server configuration (authorization, tls...); address, port and JetStream come from the command line. */
  config?: string;
  /** Files the configuration names (includes, certificates), written beside it. */
  files?: Record<string, string>;
  /** `nats` (default), or `tls` when the configuration turns TLS on. */
  scheme?: 'nats' | 'tls';
}

/**
 * A NATS server of the test's own, with JetStream, so it can be stopped and
 * started again without touching anyone else's. With a configuration, the
 * server's log is kept, for tests that look at what it refused.
 */
export class NatsServer {
  private child: ChildProcess | undefined;

  private constructor(readonly port: number, private readonly dir: string, private readonly confDir: string, private readonly opts: NatsServerOptions) {}

  static async start(t: Test, opts: NatsServerOptions = {}): Promise<NatsServer> {
    const dir = await mkdtemp(join(tmpdir(), 'odds-nats-'));
    const confDir = await mkdtemp(join(tmpdir(), 'odds-nats-conf-'));
    const server = new NatsServer(await freePort(), dir, confDir, opts);
    t.teardown(async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
      await rm(confDir, { recursive: true, force: true });
    });
    for (const [name, text] of Object.entries(opts.files ?? {})) await writeFile(join(confDir, name), text);
    if (opts.config !== undefined) await writeFile(join(confDir, 'server.conf'), opts.config);
    await server.resume();
    return server;
  }

  get url(): string {
    return `${this.opts.scheme ?? 'nats'}://127.0.0.1:${this.port}`;
  }

  /** A file written beside the configuration. */
  file(name: string): string {
    return join(this.confDir, name);
  }

  /** What the server logged (with a configuration only). */
  log(): Promise<string> {
    return readFile(join(this.confDir, 'server.log'), 'utf8').catch(() => '');
  }

  async resume(): Promise<void> {
    const conf = this.opts.config === undefined ? [] : ['-c', join(this.confDir, 'server.conf'), '-l', join(this.confDir, 'server.log')];
    this.child = spawn(NATS_BINARY!, [...conf, '-a', '127.0.0.1', '-p', String(this.port), '-js', '-sd', this.dir], { stdio: 'ignore' });
    await waitFor(() => reachable(this.port), `nats-server listening on port ${this.port}`, 10000, 50);
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

/** The service user's permissions as the Kubernetes manifests grant them. */
const PERMISSIONS = readFileSync(join(findRoot(), 'k8s', 'nats', 'odds-permissions.conf'), 'utf8');

/** Passwords of the users `authorizedNats` makes: the service (`odds`), a peer with the service's rights, an intruder with none. */
export const USERS = { odds: 'odds-secret', peer: 'peer-secret', intruder: 'intruder-secret' } as const;

/**
 * A NATS server that requires credentials, with the service user's rights
 * taken from k8s/nats/odds-permissions.conf, so the tests prove the shipped
 * permissions are enough and no wider. `users` are added to the three of USERS.
 */
export function authorizedNats(t: Test, opts: { users?: string[]; extra?: string; scheme?: 'nats' | 'tls' } = {}): Promise<NatsServer> {
  const users = [
    `{ user: odds, password: "${USERS.odds}", permissions: $ODDS_SERVICE_PERMISSIONS }`,
    `{ user: peer, password: "${USERS.peer}", permissions: $ODDS_SERVICE_PERMISSIONS }`,
    `{ user: intruder, password: "${USERS.intruder}", permissions: { publish: { deny: ">" }, subscribe: { deny: ">" } } }`,
    ...(opts.users ?? []),
  ];
  const config = `include "odds-permissions.conf"\nauthorization {\n  users = [\n    ${users.join('\n    ')}\n  ]\n}\n${opts.extra ?? ''}\n`;
  return NatsServer.start(t, { config, files: { 'odds-permissions.conf': PERMISSIONS }, scheme: opts.scheme });
}
