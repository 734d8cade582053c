/** Which core the server under test runs on and which the load generator, with taskset. */
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

export interface Pinning {
  /** Where the server under test runs; undefined when not pinned. */
  server: string | undefined;
  /** Where the load generator runs. */
  load: string | undefined;
  note: string;
}

/**
 * Pins this process (every thread: -a) to the load core and tells the caller how to start
 * servers on the other. Without taskset or with one core, nothing is pinned and the note says so.
 */
export function pinLoadGenerator(): Pinning {
  const cores = availableParallelism();
  const hasTaskset = spawnSync('taskset', ['--version'], { stdio: 'ignore' }).status === 0;
  if (!hasTaskset) return { server: undefined, load: undefined, note: 'taskset not found: server and load generator share all cores (numbers are noisier and lower)' };
  if (cores < 2) return { server: undefined, load: undefined, note: 'one core only: server and load generator share it' };
  const r = spawnSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' });
  if (r.status !== 0) return { server: undefined, load: undefined, note: 'taskset could not pin this process: nothing pinned' };
  return { server: '0', load: '1', note: `server pinned to core 0, load generator to core 1 (taskset; ${cores} cores)` };
}
