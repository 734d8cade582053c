import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { batchesOf, isUnitFile } from './batch/plan.js';
import { byDuration, closingCounts, coresOf, findTestFiles, nextFitting, readDurations, runFiles, writeDurations } from './runner.js';

/** Compiled fixture files: one passes (leaving a process behind), one fails, one exits without a count, one never ends. */
const FIXTURES = new URL('./fixtures/runner/', import.meta.url).pathname;
/** Unit fixtures for a batch: one passes with root-level hooks, one fails, one exits the process, one comes after. */
const BATCH_FIXTURES = new URL('./fixtures/batch/', import.meta.url).pathname;
const ROOT = new URL('../..', import.meta.url).pathname;

/** The pids of the process the passing fixture leaves running (Linux /proc). */
function strays(): number[] {
  return readdirSync('/proc').filter((n) => /^\d+$/.test(n)).filter((n) => {
    try {
      return readFileSync(`/proc/${n}/cmdline`, 'utf8') === `${process.execPath}\0-e\0setInterval(() => {}, 1000)\0`;
    } catch {
      return false;
    }
  }).map(Number);
}

t.test('the run speaks TAP: one line a passing file, the failing ones in full, failures named at the end, the counts CI reads', async (t) => {
  let out = '';
  // Only this run's: a run stopped with SIGKILL elsewhere on the machine may have left one of its own.
  const before = new Set(strays());
  const files = findTestFiles([FIXTURES]);
  t.same(files.map((f) => f.slice(FIXTURES.length)), ['dies.test.js', 'fails.test.js', 'hangs.test.js', 'passes.test.js']);
  const result = await runFiles({
    root: ROOT, files, jobs: 4, cores: 4, timeoutMs: 10_000, hardStopMs: 10_000, verbose: false, durations: {}, env: process.env, write: (s) => (out += s),
  });
  t.notOk(result.ok);
  const name = (f: string) => `dist/test/fixtures/runner/${f}.test.js`;
  t.match(out, /^TAP version 14\n1\.\.4\n/);
  t.match(out, new RegExp(`^ok \\d - ${name('passes')} # time=[\\d.]+s cpu=[\\d.]+s$`, 'm'), 'a passing file: one line, with its time and CPU');
  // Files reaped in the same turn of the loop may share one reading: the sum is exact.
  const cpu = result.files.reduce((sum, f) => sum + f.cpuSeconds, 0);
  t.ok(cpu >= 0.4, `the CPU the files spent is counted: ${cpu.toFixed(2)} s, one of them spinning half a second`);
  t.notMatch(out, `# Subtest: ${name('passes')}`, 'and nothing more');
  t.same(strays().filter((pid) => !before.has(pid)), [], 'what a file left running is stopped once it ends');
  t.match(out, new RegExp(`^# Subtest: ${name('fails')}\\n[\\s\\S]*one is not two[\\s\\S]*# said on stderr[\\s\\S]*^not ok \\d - ${name('fails')}`, 'm'), 'a failing file: its TAP and its stderr');
  t.match(out, `reason: exit 3`, 'a file that died says how');
  t.match(out, `reason: stopped after 10 s`, 'a file that never ends is stopped, named');
  t.match(out, new RegExp(`# failed 3 of 4 files:\\n#   ${name('dies')} \\(exit 3\\)\\n#   ${name('fails')} \\(exit 1\\)\\n#   ${name('hangs')} \\(stopped after 10 s\\)\\n`));
  t.same(result.counts, { total: 7, pass: 3, fail: 3, skip: 1, todo: 0 }, 'the files\' own counts, plus one failure for each file that died without one');
  t.match(out, /^# \{ total: 7, pass: 3, fail: 3, skip: 1, todo: 0 \}\n# time=[\d.]+s\n# the machine's CPU was \d+% busy, the files' own \d+ s of it\n$/m);
});

t.test('unit files share a process, each still reported as its own: its line, its TAP and counts, its hooks kept to itself; the file the process died in and those after fail by name', async (t) => {
  let out = '';
  const files = findTestFiles([BATCH_FIXTURES]);
  const result = await runFiles({
    root: ROOT, files, jobs: 4, cores: 4, timeoutMs: 10_000, hardStopMs: 10_000, verbose: true, durations: {}, env: process.env, write: (s) => (out += s), batches: 1,
  });
  const name = (f: string) => `dist/test/fixtures/batch/${f}.test.js`;
  // tap's own exit handler turns the exit code into 1.
  t.match(result.files.map((f) => [relative(ROOT, f.file), f.ok, f.reason]), [
    [name('a-passes'), true, undefined],
    [name('a2-empty'), false, 'it ran no test'],
    [name('b-fails'), false, undefined],
    [name('c-exits'), false, /^the batch ended while it ran \(exit \d\)$/],
    [name('d-after'), false, 'not run: the batch ended before it'],
  ]);
  t.same(result.files.map((f) => f.counts.total), [2, 1, 2, 1, 1], 'each file its own count; one failure each for those that never gave one');
  t.same(result.counts, { total: 7, pass: 3, fail: 4, skip: 0, todo: 0 });
  t.match(out, /^TAP version 14\n1\.\.5\n/, 'the plan counts files, not processes');
  const block = (f: string) => new RegExp(`# Subtest: ${name(f)}\\n([\\s\\S]*?)^(not )?ok \\d+ - ${name(f)} # time`, 'm').exec(out)?.[1] ?? '';
  t.match(block('a-passes'), "# a's hook, before a passes", 'a file\'s root-level hook runs for its own tests');
  t.match(block('a-passes'), '# batch-file {not json', 'what only looks like a file\'s end is its output');
  t.notMatch(block('b-fails'), "a's hook", 'and not for the next file\'s');
  t.match(block('b-fails'), /one is not two[\s\S]*b said on stderr/, 'a failing file: its TAP, and the batch\'s stderr');
  t.match(block('c-exits'), 'c passes first', 'the file the process died in: what it printed');
  t.match(out, `#   ${name('d-after')} (not run: the batch ended before it)`);
});

t.test('which files are unit files: nothing they or test/ helpers import starts real components', async (t) => {
  const files: Record<string, string> = {
    '/t/dist/test/a.test.js': "import t from 'tap';\nimport { Book } from '../src/odds/book.js';\nimport { seeded } from './helpers/random.js';",
    '/t/dist/test/b.test.js': "import t from 'tap';\nimport {\n  startService,\n} from '../src/service.js';",
    '/t/dist/test/c.test.js': "import t from 'tap';\nimport { http } from './helpers/metrics.js';",
    '/t/dist/test/helpers/metrics.js': "import { http } from './service.js';",
    '/t/dist/test/helpers/service.js': "import pg from 'pg';",
    '/t/dist/test/helpers/random.js': "export const seeded = 1;",
    '/t/dist/test/d.test.js': "const { spawn } = await import('node:child_process');",
    '/t/dist/test/e.test.js': "import { execFileSync, spawnSync as run } from 'node:child_process';",
    '/t/dist/test/f.test.js': "import { spawn, spawnSync } from 'node:child_process';",
    '/t/dist/test/g.test.js': "export { scrape } from './helpers/metrics.js';",
    '/t/dist/test/h.test.js': "import { fork } from 'child_process';",
  };
  const read = (p: string) => files[p] ?? '';
  t.same(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((n) => isUnitFile(`/t/dist/test/${n}.test.js`, read)), [true, false, false, false, true, false, false, false],
    'src/ by the list, helpers followed, re-exports and dynamic imports seen; a child process waited for is the file\'s own work, one that may outlive it is not');
  const under = (p: string) => files[p.replace('/home/dev/src/odds', '/t')] ?? '';
  t.notOk(isUnitFile('/home/dev/src/odds/dist/test/c.test.js', under), 'a checkout under a folder named src still has its helpers followed');
  t.notOk(isUnitFile('/t/dist/test/missing.test.js', () => { throw new Error('ENOENT'); }), 'a file that cannot be read runs alone, where it fails by name');
});

t.test('batches are about equal by recorded time, in path order, never empty', async (t) => {
  const seconds: Record<string, number> = { a: 5, b: 1, c: 1, d: 3 };
  // a 5, d 3, then the ones of a second (e never run counts one) to the lighter batch each time.
  t.same(batchesOf(['a', 'b', 'c', 'd', 'e'], 2, (f) => seconds[f]), [['a', 'e'], ['b', 'c', 'd']]);
  t.same(batchesOf(['a'], 4, () => 1), [['a']]);
});

t.test('longest first by the record; a file with no record before all', async (t) => {
  const root = '/r';
  const files = ['a', 'b', 'c', 'd'].map((n) => join(root, n));
  const rec = (seconds: number) => ({ seconds, cpu: seconds / 2 });
  t.same(byDuration(files, root, { a: rec(1), b: rec(30), d: rec(2) }).map((f) => f.slice(3)), ['c', 'b', 'd', 'a']);
});

t.test('files are packed by the cores they keep busy: waiting ones fill in beside busy ones, never past the budget or the job count', async (t) => {
  const root = '/r';
  const durations = { busy: { seconds: 10, cpu: 9 }, waits: { seconds: 10, cpu: 0.5 }, idle: { seconds: 10, cpu: 0 } };
  const cores = (f: string) => coresOf(join(root, f), root, durations);
  const cost = { cores };
  t.equal(cores('busy'), 0.9);
  t.equal(cores('idle'), 0.1, 'a file never counts as free');
  t.equal(cores('new'), 1, 'a file with no record counts one core');
  const o = { jobs: 4, cores: 2 };
  t.equal(nextFitting(['busy', 'busy', 'waits'], ['busy', 'busy'], o, cost), 2, 'two busy files fill two cores: the one that waits goes next, out of turn');
  t.equal(nextFitting(['busy', 'waits'], ['busy'], o, cost), 0, 'in turn while it fits');
  t.equal(nextFitting(['busy'], ['busy', 'busy'], o, cost), -1, 'nothing that does not fit');
  t.equal(nextFitting(['waits'], ['idle', 'idle', 'idle', 'idle'], o, cost), -1, 'nor past the job count');
  t.equal(nextFitting(['new'], [], { jobs: 4, cores: 0.5 }, cost), 0, 'on an idle machine the first starts, however busy it is');
  t.equal(nextFitting([], [], o, cost), -1);
});

t.test('the record keeps each file\'s time and CPU; an older record of bare seconds still orders the run', async (t) => {
  const dir = t.testdir({ 'old.json': JSON.stringify({ 'dist/test/a.test.js': 12.5 }) });
  t.same(readDurations([join(dir, 'missing.json'), join(dir, 'old.json')]), { 'dist/test/a.test.js': { seconds: 12.5, cpu: 12.5 } });
  const file = join(dir, 'new.json');
  const counts = { total: 1, pass: 1, fail: 0, skip: 0, todo: 0 };
  writeDurations(file, { 'dist/test/a.test.js': { seconds: 12.5, cpu: 12.5 } }, [{ file: join(dir, 'dist/test/b.test.js'), ok: true, seconds: 3.14159, cpuSeconds: 0.26, counts }], dir);
  t.same(readDurations([file]), { 'dist/test/a.test.js': { seconds: 12.5, cpu: 12.5 }, 'dist/test/b.test.js': { seconds: 3.1, cpu: 0.3 } });
});

t.test('the closing count is the last root summary line', async (t) => {
  t.same(closingCounts('    # { total: 9, pass: 9 }\n# { total: 3, pass: 2, fail: 1 }\n# time=1ms\n'), { total: 3, pass: 2, fail: 1, skip: 0, todo: 0 });
  t.equal(closingCounts('Bail out!\n'), undefined);
});
