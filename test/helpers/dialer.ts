import { fork, type ChildProcess } from 'node:child_process';
import type net from 'node:net';
import type { Netns } from '../../bench/lib/netns.js';

/**
 * TCP connections that start in a network namespace, for a test's clients in this process: a
 * child process in the namespace dials them and hands each socket over, so the test speaks on it
 * as on its own, over the namespace's path (which `Netns.cut` can then silence).
 */
export class Dialer {
  private readonly child: ChildProcess;
  private readonly waiting = new Map<number, { ok: (s: net.Socket) => void; fail: (e: Error) => void }>();
  private nextId = 1;

  constructor(ns: Netns) {
    const [cmd, ...args] = ns.exec;
    this.child = fork(new URL('./dialer-child.js', import.meta.url).pathname, [], { execPath: cmd, execArgv: [...args, process.execPath], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child.on('message', (m: { id: number; error?: string }, sock?: net.Socket) => {
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error || !sock) w?.fail(new Error(m.error ?? 'no socket handed over'));
      else w?.ok(sock);
    });
  }

  dial(host: string, port: number, localAddress: string): Promise<net.Socket> {
    return new Promise((ok, fail) => {
      const id = this.nextId++;
      this.waiting.set(id, { ok, fail });
      this.child.send({ id, host, port, localAddress });
    });
  }

  close(): void {
    this.child.disconnect();
  }
}
