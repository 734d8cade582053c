import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { staleSource } from '../../src/cli/fresh.js';
import { KEY_CLI, MAIN, runTool, tempDir } from './processes.js';

/** The checkout the suite was built in (dist/test/cli/ is three levels down). */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * The old scripts compiled the TypeScript first (6 to 10 s on an idle machine) and so rewrote
 * dist/, which the unchanged mtimes below rule out whatever the machine's speed.
 */
t.test('`npm run key -- --help` runs the compiled tool without building first', async (t) => {
  const before = [KEY_CLI, MAIN].map((f) => statSync(f).mtimeMs);
  const child = spawn('npm', ['run', '--silent', 'key', '--', '--help'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  const code = await new Promise((ok) => child.on('close', ok));
  t.equal(code, 0);
  t.match(stdout, /^usage: npm run key -- create/);
  t.same([KEY_CLI, MAIN].map((f) => statSync(f).mtimeMs), before, 'dist/ was not rebuilt');
});

/**
 * A checkout in miniature: a tool's source and its compiled file (which runs
 * the real check, copied in), and the protobuf schema with its output; every
 * source a minute older than its build.
 */
async function checkout(t: Test): Promise<string> {
  const root = await tempDir(t);
  const files: Record<string, string> = {
    'package.json': '{"type":"module"}',
    'src/cli/x.ts': '',
    'proto/odds.proto': '',
    'dist/src/cli/x.js': "import { runsAsTool } from './fresh.js';\nif (runsAsTool(import.meta.url)) console.log('ran');\n",
    'dist/src/odds/gen/odds.js': '',
  };
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(join(root, dirname(f)), { recursive: true });
    writeFileSync(join(root, f), text);
  }
  copyFileSync(join(ROOT, 'dist/src/cli/fresh.js'), join(root, 'dist/src/cli/fresh.js'));
  age(root, 'src/cli/x.ts', 60);
  age(root, 'proto/odds.proto', 60);
  return root;
}

/** Sets a file's modification time `seconds` ago. */
const age = (root: string, file: string, seconds: number) => {
  const at = new Date(Date.now() - seconds * 1000);
  utimesSync(join(root, file), at, at);
};

t.test('a build newer than every source is current, and the tool runs', async (t) => {
  const root = await checkout(t);
  t.equal(staleSource(root), undefined);
  t.match(await runTool(join(root, 'dist/src/cli/x.js'), [], {}), { code: 0, stdout: 'ran\n', stderr: '' });
});

t.test('a source changed after the build: the tool says so in one line and exits 2, running nothing', async (t) => {
  const root = await checkout(t);
  age(root, 'dist/src/cli/x.js', 120);
  t.equal(staleSource(root), 'src/cli/x.ts');
  t.same(await runTool(join(root, 'dist/src/cli/x.js'), [], {}), { code: 2, stdout: '', stderr: 'dist/ is older than src/cli/x.ts: run npm run build\n' });
});

t.test('a source with no compiled file (added since the build) is named', async (t) => {
  const root = await checkout(t);
  writeFileSync(join(root, 'src/cli/y.ts'), '');
  t.equal(staleSource(root), 'src/cli/y.ts');
});

t.test('a protobuf schema changed after the build is named', async (t) => {
  const root = await checkout(t);
  age(root, 'dist/src/odds/gen/odds.js', 120);
  t.equal(staleSource(root), 'proto/odds.proto');
});

t.test('a copy with no src/ (an image holding dist/ only) has nothing to compare', async (t) => {
  t.equal(staleSource(await tempDir(t)), undefined);
});
