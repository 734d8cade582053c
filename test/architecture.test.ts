import t from 'tap';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

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
