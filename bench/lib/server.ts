/** Spawning a server under test on its core and waiting until it listens. */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Pinning } from './cores.js';
import { ROOT } from './paths.js';
import { SHARED } from './settings.js';

export interface Server {
  readonly name: string;
  readonly proc: ChildProcess;
  readonly pid: number;
  readonly url: string;
  readonly port: number;
  /** The inspector's WebSocket URL when started with inspect. */
  readonly inspector: string | undefined;
  /** Distinct warning and error lines the server logged after it started (at most 20). */
  warnings(): string[];
  stop(): Promise<void>;
}

export interface ServerSpec {
  name: string;
  /** Script and arguments for node. */
  args: string[];
  env?: Record<string, string | undefined>;
  pinning: Pinning;
  /** Start with the inspector on a free loopback port, for CPU profiles. */
  inspect?: boolean;
  /** Extra node flags. */
  nodeFlags?: string[];
  timeoutMs?: number;
}

/**
 * Starts a node process on the server core and waits for the line `... listening on http://...`.
 * With taskset, `taskset -c 0 node ...` execs node, so the pid is node's own.
 */
export function startServer(spec: ServerSpec): Promise<Server> {
  const nodeArgs = [...(spec.nodeFlags ?? []), ...(spec.inspect ? ['--inspect=127.0.0.1:0'] : []), ...spec.args];
  const [cmd, args] = spec.pinning.server !== undefined
    ? ['taskset', ['-c', spec.pinning.server, process.execPath, ...nodeArgs]]
    : [process.execPath, nodeArgs];
  const proc = spawn(cmd, args as string[], {
    cwd: ROOT,
    env: { ...process.env, ...spec.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((ok, fail) => {
    let out = '';
    let inspector: string | undefined;
    let done = false;
    const warnings = new Set<string>();
    let partial = '';
    const scan = (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (warnings.size < 20 && /"level":"(warn|error)"|\b(WARN|ERROR|Error)\b/.test(line) && !/Debugger|inspector|For help/.test(line)) {
          warnings.add(line.replace(/"time":"[^"]*",?/, '').slice(0, 300));
        }
      }
    };
    const timer = setTimeout(() => finish(new Error(`${spec.name} did not start within ${spec.timeoutMs ?? 60000} ms:\n${out}`)), spec.timeoutMs ?? 60000);
    const finish = (err?: Error, url?: string) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) {
        proc.kill('SIGKILL');
        return fail(err);
      }
      const port = Number(new URL(url!).port);
      const exited = new Promise<void>((r) => (proc.exitCode !== null ? r() : proc.once('exit', () => r())));
      ok({
        name: spec.name, proc, pid: proc.pid!, url: url!, port, inspector, warnings: () => [...warnings],
        stop: async () => {
          if (proc.exitCode !== null) return;
          proc.kill('SIGTERM');
          const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
          await exited;
          clearTimeout(t);
        },
      });
    };
    const onData = (chunk: Buffer) => {
      if (done) return scan(chunk.toString());
      out += chunk.toString();
      const ins = /Debugger listening on (ws:\/\/\S+)/.exec(out);
      if (ins) inspector = ins[1];
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m && (!spec.inspect || inspector)) finish(undefined, m[1].replace('0.0.0.0', '127.0.0.1'));
      if (out.length > 100_000) out = out.slice(-20_000);
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (c: Buffer) => {
      onData(c);
      if (done && SHARED.verbose) process.stderr.write(`[${spec.name}] ${c}`);
    });
    proc.stdout!.on('data', (c: Buffer) => {
      if (done && SHARED.verbose) process.stdout.write(`[${spec.name}] ${c}`);
    });
    proc.once('exit', (code) => finish(new Error(`${spec.name} exited with ${code} before listening:\n${out}`)));
  });
}
