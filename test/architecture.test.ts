import t from 'tap';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { MAX_LINES, longFunctions } from './helpers/function-length.js';

/**
 * The tree follows the data flow: each folder of src/ may use only the
 * folders below it here (its README says the same), so a change to one
 * concern never reaches up into what depends on it.
 */
const LAYERS = ['cli', 'exchange', 'web', 'client', 'http', 'demo', 'ingest', 'stored-sets', 'relay', 'hub', 'record', 'bus', 'odds', 'refdata', 'auth', 'db', 'metrics', 'lib'];
/** Below every folder: usable by all, using none. */
const SHARED = new Set(['config', 'errors', 'log']);
const SRC = new URL('../../src/', import.meta.url).pathname;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'gen' ? [] : files(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

t.test('every folder of src/ uses only the folders below it', async (t) => {
  for (const file of files(SRC)) {
    const [folder] = relative(SRC, file).split(sep);
    const rank = LAYERS.indexOf(folder);
    if (rank < 0) continue;
    const used = [...readFileSync(file, 'utf8').matchAll(/from '((?:\.\.\/)+)([a-z-]+)/g)]
      .filter((m) => m[1].length / 3 === relative(SRC, file).split(sep).length - 1)
      .map((m) => m[2]);
    for (const other of used) {
      if (other === folder || SHARED.has(other)) continue;
      t.ok(LAYERS.indexOf(other) > rank, `${relative(SRC, file)} uses ${other}/, which must sit below ${folder}/`);
    }
  }
});

t.test('config, errors and log use no folder of src/', async (t) => {
  for (const name of SHARED) {
    const text = readFileSync(join(SRC, `${name}.ts`), 'utf8');
    t.notMatch(text, /from '\.\/[a-z-]+\//, `${name}.ts imports nothing from a folder`);
  }
});

t.test('every folder of src/ starts with a README saying what it owns and what it may use', async (t) => {
  for (const folder of LAYERS) t.ok(statSync(join(SRC, folder, 'README.md')).size > 100, folder);
});

/** The files of src/ each file imports (type-only imports too: they bind the files as tightly for a reader). */
function imports(all: ReadonlySet<string>): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of all) {
    const text = readFileSync(file, 'utf8');
    const named = [...text.matchAll(/^\s*(?:import|export)\b[^'";]*?from\s+'(\.{1,2}\/[^']+)'|\bimport\('(\.{1,2}\/[^']+)'\)/gm)];
    graph.set(file, named.map((m) => resolve(dirname(file), m[1] ?? m[2]).replace(/\.js$/, '.ts')).filter((f) => all.has(f)));
  }
  return graph;
}

/** One circle through each group of files that import each other, as the files in import order. */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const found: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const onPath = new Set<string>();
  const visit = (file: string): void => {
    path.push(file);
    onPath.add(file);
    for (const next of graph.get(file) ?? []) {
      if (onPath.has(next)) found.push(path.slice(path.indexOf(next)));
      else if (!done.has(next)) visit(next);
    }
    path.pop();
    onPath.delete(file);
    done.add(file);
  };
  for (const file of graph.keys()) if (!done.has(file)) visit(file);
  return found;
}

t.test('no file of src/ imports itself through others: each can be read knowing only what it imports', async (t) => {
  const found = circles(imports(new Set(files(SRC))));
  t.same(found.map((c) => [...c, c[0]].map((f) => relative(SRC, f)).join(' -> ')), []);
});

t.test('the circle check finds a circle', async (t) => {
  const graph = new Map([['a', ['b']], ['b', ['c']], ['c', ['a', 'd']], ['d', []]]);
  t.same(circles(graph), [['a', 'b', 'c']]);
  t.same(circles(new Map([['a', ['b']], ['b', []]])), []);
});

t.test(`no function in src/ is longer than ${MAX_LINES} lines of code: each reads on one screen`, async (t) => {
  t.same(longFunctions(SRC, 'src'), [], 'split these into named steps');
});
