import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The checkout this file was compiled in: dist/src/cli/ is three levels down. */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Sources compiled into dist/ other than the TypeScript under src/. */
const GENERATED: readonly [string, string][] = [['proto/odds.proto', 'dist/src/odds/gen/odds.js']];

const mtime = (path: string): number | undefined => statSync(path, { throwIfNoEntry: false })?.mtimeMs;

/**
 * The first source file newer than its compiled output (or without one), or
 * undefined when dist/ is current. Only modification times are compared (a
 * few hundred stats, milliseconds), so the check costs a tool nothing. A copy
 * without src/ (an image holding dist/ only) has nothing to compare.
 */
export function staleSource(root = ROOT): string | undefined {
  let entries;
  try {
    entries = readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true });
  } catch {
    return undefined;
  }
  const pairs: [string, string][] = [...GENERATED];
  for (const e of entries) {
    if (!e.isFile() || !e.name.endsWith('.ts') || e.name.endsWith('.d.ts')) continue;
    const source = relative(root, join(e.parentPath, e.name));
    pairs.push([source, join('dist', source.replace(/\.ts$/, '.js'))]);
  }
  for (const [source, output] of pairs) {
    const built = mtime(join(root, output));
    const changed = mtime(join(root, source));
    if (changed !== undefined && (built === undefined || built < changed)) return source;
  }
  return undefined;
}

/** The board's bundle (dist/web/, built from src/ by esbuild after tsc): its page is written last. */
const BOARD = 'dist/web/index.html';

/**
 * What `npm start` would run stale: a source newer than its compiled file (staleSource), or any
 * source the board may bundle newer than the bundle (a tsc alone leaves the board as it was).
 * Undefined when everything is current, so the start skips the build.
 */
export function staleBuild(root = ROOT): string | undefined {
  const stale = staleSource(root);
  if (stale) return stale;
  const board = mtime(join(root, BOARD));
  if (board === undefined) return BOARD;
  let entries;
  try {
    entries = readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true });
  } catch {
    return undefined;
  }
  for (const e of entries) {
    if (!e.isFile() || !/\.(ts|css|html)$/.test(e.name)) continue;
    const source = join(e.parentPath, e.name);
    if (mtime(source)! > board) return relative(root, source);
  }
  return undefined;
}

/**
 * Whether the module at `url` is the process's entry point, that is, a tool
 * being run. The tools run their compiled files directly (built once by
 * `npm install`), so a checkout edited since is said in one line, exit 2,
 * rather than old code running silently.
 */
export function runsAsTool(url: string): boolean {
  if (!process.argv[1] || url !== pathToFileURL(process.argv[1]).href) return false;
  const stale = staleSource();
  if (stale) {
    process.stderr.write(`dist/ is older than ${stale}: run npm run build\n`);
    process.exit(2);
  }
  return true;
}
