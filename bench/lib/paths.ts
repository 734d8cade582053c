/** Where the benchmarks find the build and put their results. */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The project root (dist/bench/lib/paths.js is three levels down). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const RESULTS = join(ROOT, 'bench', 'results');
export const DIST = join(ROOT, 'dist');
