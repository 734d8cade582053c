import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// A real gc() without --expose-gc on the command line (tap starts the process): the flag can be set at run time.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Garbage collected three times, with turns of the loop between for finalizers to free native memory (no event says when they have). */
export async function collect(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    gc();
    for (let turn = 0; turn < 10; turn++) await new Promise((r) => setImmediate(r));
  }
}

/** The heap in use once garbage is collected. */
export async function heapAfterGc(): Promise<number> {
  await collect();
  return process.memoryUsage().heapUsed;
}

/** The process's resident memory once garbage is collected. */
export async function rssAfterGc(): Promise<number> {
  await collect();
  return process.memoryUsage().rss;
}
