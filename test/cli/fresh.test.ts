/**
 * Whether dist/ is older than what it was built from, decided on a checkout in miniature by
 * modification times alone: a source changed after its build, a source added since, the protobuf
 * schema; a copy without src/ has nothing to compare. (The tools refusing to run a stale build,
 * and npm scripts running what is built: npm-start.test.ts.)
 */
import t, { type Test } from 'tap';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { staleSource } from '../../src/cli/fresh.js';

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'fresh-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Sets a file's modification time `seconds` ago. */
const age = (root: string, file: string, seconds: number) => {
  const at = new Date(Date.now() - seconds * 1000);
  utimesSync(join(root, file), at, at);
};

/** A checkout in miniature: a tool's source and its compiled file, the protobuf schema and its output; every source a minute older than its build. */
function checkout(t: Test): string {
  const root = tempDir(t);
  for (const f of ['src/cli/x.ts', 'proto/odds.proto', 'dist/src/cli/x.js', 'dist/src/odds/gen/odds.js']) {
    mkdirSync(join(root, dirname(f)), { recursive: true });
    writeFileSync(join(root, f), '');
  }
  age(root, 'src/cli/x.ts', 60);
  age(root, 'proto/odds.proto', 60);
  return root;
}

t.test('a build newer than every source is current', async (t) => {
  t.equal(staleSource(checkout(t)), undefined);
});

t.test('a source changed after the build is named', async (t) => {
  const root = checkout(t);
  age(root, 'dist/src/cli/x.js', 120);
  t.equal(staleSource(root), 'src/cli/x.ts');
});

t.test('a source with no compiled file (added since the build) is named', async (t) => {
  const root = checkout(t);
  writeFileSync(join(root, 'src/cli/y.ts'), '');
  t.equal(staleSource(root), 'src/cli/y.ts');
});

t.test('a protobuf schema changed after the build is named', async (t) => {
  const root = checkout(t);
  age(root, 'dist/src/odds/gen/odds.js', 120);
  t.equal(staleSource(root), 'proto/odds.proto');
});

t.test('a copy with no src/ (an image holding dist/ only) has nothing to compare', async (t) => {
  t.equal(staleSource(tempDir(t)), undefined);
});
