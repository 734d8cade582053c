/**
 * Builds the board into dist/web/: one esbuild bundle of main.ts (with the
 * client and its protobuf codec) and of board.css, each named by a hash of its
 * content, and index.html naming them. Run by `npm run build` after tsc, from
 * dist/src/web/; the only part of this folder that runs in Node.
 */
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SOURCE = join(ROOT, 'src/web');
const OUT = join(ROOT, 'dist/web');
const ASSETS = join(OUT, 'assets');

// Old hashed files would otherwise pile up, and the server serves every file it finds.
rmSync(OUT, { recursive: true, force: true });
mkdirSync(ASSETS, { recursive: true });

const result = await build({
  entryPoints: [join(SOURCE, 'main.ts'), join(SOURCE, 'board.css')],
  outdir: ASSETS,
  entryNames: 'board-[hash]',
  bundle: true,
  minify: true,
  format: 'esm',
  platform: 'browser',
  target: ['chrome110', 'firefox110', 'safari16'],
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});

/** The hashed file built from each entry point. */
const built = new Map<string, string>();
for (const [file, output] of Object.entries(result.metafile.outputs)) {
  if (output.entryPoint) built.set(basename(output.entryPoint), basename(file));
}
const script = built.get('main.ts');
const style = built.get('board.css');
if (!script || !style) throw new Error('the web build made no script or no stylesheet');

const html = readFileSync(join(SOURCE, 'index.html'), 'utf8').replace('{{script}}', `/assets/${script}`).replace('{{style}}', `/assets/${style}`);
writeFileSync(join(OUT, 'index.html'), html);

const sizes = [join(OUT, 'index.html'), join(ASSETS, script), join(ASSETS, style)].map((f) => `${relative(ROOT, f)} ${(statSync(f).size / 1024).toFixed(1)} KiB`);
process.stdout.write(`web: ${sizes.join(', ')}\n`);
