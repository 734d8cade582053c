import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// A real gc() without --expose-gc on the command line (tap starts the process): the flag can be set at run time.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** The heap in use once garbage is collected (three rounds, with turns between for finalizers). */
export async function heapAfterGc(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 20));
  }
  return process.memoryUsage().heapUsed;
}
