/**
 * A child process of the fan-out benchmark (counting clients, sampler), driven over IPC: each
 * command is answered by one message of a given type.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { DIST } from '../lib/paths.js';

export class Child {
  private waiting: { type: string; ok: (m: any) => void }[] = [];
  constructor(readonly proc: ChildProcess) {
    proc.on('message', (m: { type: string }) => {
      const i = this.waiting.findIndex((w) => w.type === m.type);
      if (i >= 0) this.waiting.splice(i, 1)[0].ok(m);
    });
  }

  /** Forks dist/bench/fanout/<script> at the given niceness; through `wrap` (a command that then runs node, as `ip netns exec <name>`) if given. */
  static start(script: string, nice: number, wrap?: string[]): Child {
    const how = wrap ? { execPath: wrap[0], execArgv: [...wrap.slice(1), process.execPath] } : {};
    const proc = fork(join(DIST, 'bench', 'fanout', script), [], { ...how, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    if (nice) {
      try {
        setPriority(proc.pid!, nice);
      } catch {
        // not allowed: the child then competes evenly
      }
    }
    return new Child(proc);
  }

  ask<T = any>(msg: { type: string } & Record<string, unknown>, reply: string, timeoutMs = 120_000): Promise<T> {
    return new Promise((ok, fail) => {
      const t = setTimeout(() => fail(new Error(`no ${reply} from ${this.proc.pid} within ${timeoutMs} ms`)), timeoutMs);
      this.waiting.push({ type: reply, ok: (m) => { clearTimeout(t); ok(m); } });
      this.proc.send(msg);
    });
  }

  async close(): Promise<void> {
    if (this.proc.exitCode !== null || !this.proc.connected) return;
    await this.ask({ type: 'close' }, 'closed', 10_000).catch(() => this.proc.kill('SIGKILL'));
  }
}
