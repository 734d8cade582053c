/**
 * One process for many unit files (runner.ts picks them): the files run one after another, each
 * as a subtest named by its path, with `tap` in the file meaning that subtest (hook.ts, tap.ts).
 * A batch saves each file a Node start and tap's load (about 0.4 s of CPU on the 2-core machine
 * the suite is sized for: most of what a unit file costs).
 *
 * After each file a `# batch-file {...}` comment says how it ended; runner.ts reads those, so a
 * file that never reports (the process died or was stopped in it) is failed by name.
 */
import t from 'tap';
import { register } from 'node:module';
import { relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BATCH_ENV, FILE_END, type FileEnd } from './protocol.js';

register('./hook.js', import.meta.url);
const { within } = await import('./tap.js');

// Each file has tap's timeout to itself, as it would in a process of its own; the batch has none.
const timeout = Number(process.env.TAP_TIMEOUT || 30) * 1000;
t.setTimeout(0);

for (const file of (process.env[BATCH_ENV] ?? '').split('\n').filter(Boolean)) {
  const name = relative(process.cwd(), file);
  let own: { counts: { toJSON(): FileEnd['counts'] } } | undefined;
  const started = performance.now();
  const results = await t.test(name, { timeout }, async (st) => {
    own = st;
    within(st);
    await import(pathToFileURL(file).href);
  });
  within(t);
  const counts = own?.counts.toJSON() ?? { total: 0, pass: 0 };
  // No test at all: alone it would say so too, but in a batch it can also mean the module was
  // already loaded (imported by a file before it), so its tests ran, if anywhere, under that one.
  const end: FileEnd = { file, ok: results?.ok !== false && !counts.fail && counts.total > 0, ms: performance.now() - started, counts };
  t.comment(`${FILE_END.slice(2)}${JSON.stringify(end)}`);
}
// As a file alone: what any file left running holds the process at most the timeout, then tap
// fails it, naming the handles.
t.setTimeout(timeout);
