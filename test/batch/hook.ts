/**
 * The module hook main.ts registers: `tap` imported by a compiled test file resolves to tap.ts.
 * tap itself, and main.ts and tap.ts, get the real one.
 */
import type { ResolveHook } from 'node:module';

const HERE = new URL('./', import.meta.url).href;
const TESTS = new URL('../', import.meta.url).href;
const SHIM = new URL('./tap.js', import.meta.url).href;

export const resolve: ResolveHook = (specifier, context, next) => {
  const from = context.parentURL ?? '';
  if (specifier === 'tap' && from.startsWith(TESTS) && !from.startsWith(HERE)) return { url: SHIM, shortCircuit: true };
  return next(specifier, context);
};
