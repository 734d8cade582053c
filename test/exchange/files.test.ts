import t from 'tap';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { expand, linesOf, READ_LIMITS, type Line, type ReadLimits, type ReadProblem } from '../../src/exchange/files.js';
import { tempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait.js';
import { BZIP2, hasBzip2 } from './fixtures.js';

const TEXT = '{"a":1}\r\n\n{"a":2}\n   \n{"a":3}';
const WANT = [[1, '{"a":1}'], [3, '{"a":2}'], [5, '{"a":3}']];

async function read(files: string[], limits: ReadLimits = READ_LIMITS): Promise<(Line | ReadProblem)[]> {
  const out: (Line | ReadProblem)[] = [];
  for (const file of files) for await (const l of linesOf(file, limits)) out.push(l);
  return out;
}
const texts = (got: (Line | ReadProblem)[]) => got.map((l) => ('text' in l ? [l.line, l.text] : [l.line, l.problem]));
const bzip2 = (data: Buffer) => execFileSync(BZIP2, ['-c'], { input: data });
/** A long text that compresses to many blocks' worth, so a cut lands mid-stream. */
const long = Array.from({ length: 20000 }, (_, i) => `{"n":${i},"pad":"${'x'.repeat(i % 50)}"}`).join('\n') + '\n';

const NO_BZIP2 = `no ${BZIP2} on this machine to make .bz2 files with`;

t.test('plain and .gz: lines with their numbers; blank lines skipped, CRLF and a last line without a newline read', async (t) => {
  const dir = await tempDir(t);
  await writeFile(join(dir, 'a.json'), TEXT);
  await writeFile(join(dir, 'a.json.gz'), gzipSync(TEXT));
  t.same(texts(await read([join(dir, 'a.json')])), WANT, 'plain');
  t.same(texts(await read([join(dir, 'a.json.gz')])), WANT, 'gz');
});

t.test('.bz2 reads the same', { skip: hasBzip2() ? false : NO_BZIP2 }, async (t) => {
  const dir = await tempDir(t);
  await writeFile(join(dir, 'a.bz2'), bzip2(Buffer.from(TEXT)));
  t.same(texts(await read([join(dir, 'a.bz2')])), WANT, 'bz2');
});

t.test('a folder: every file inside, at any depth, in name order', async (t) => {
  const dir = await tempDir(t);
  await mkdir(join(dir, 'b'));
  await writeFile(join(dir, 'b', '2.json'), 'two\n');
  await writeFile(join(dir, 'b', '1.json.gz'), gzipSync('one\n'));
  await writeFile(join(dir, 'c.json'), 'three\n');
  const files = await expand([dir]);
  t.same(files, [join(dir, 'b', '1.json.gz'), join(dir, 'b', '2.json'), join(dir, 'c.json')]);
  t.same((await read(files)).map((l) => 'text' in l && l.text), ['one', 'two', 'three']);
  await t.rejects(expand([join(dir, 'missing')]), /ENOENT/);
});

for (const kind of ['gz', 'bz2'] as const) {
  const skip = kind === 'bz2' && !hasBzip2() ? NO_BZIP2 : false;
  t.test(`a truncated .${kind}: the lines before, one problem naming the line it stopped at, then the next file`, { skip }, async (t) => {
    const dir = await tempDir(t);
    const whole = kind === 'gz' ? gzipSync(long) : bzip2(Buffer.from(long));
    const cut = join(dir, `cut.json.${kind}`);
    await writeFile(cut, whole.subarray(0, Math.floor(whole.length * 0.6)));
    await writeFile(join(dir, 'next.json'), 'after\n');
    const got = await read([cut, join(dir, 'next.json')]);
    const problems = got.filter((l): l is ReadProblem => 'problem' in l);
    t.equal(problems.length, 1);
    const lines = got.filter((l): l is Line => 'text' in l && l.file === cut);
    t.same(lines.map((l) => l.line), lines.map((_, i) => i + 1), 'every line before the cut, in order');
    t.ok(lines.length < 20000, `stopped early (${lines.length} lines)`);
    t.match(problems[0], { file: cut, line: lines.length + 1, problem: /^cannot read on from here, the rest of the file is skipped \(.+\)$/ });
    t.match(got.at(-1), { file: join(dir, 'next.json'), line: 1, text: 'after' });
  });
}

t.test('a file that is not the archive its name says: one problem at line 1', async (t) => {
  const dir = await tempDir(t);
  await writeFile(join(dir, 'x.gz'), 'plain text\n');
  await writeFile(join(dir, 'x.bz2'), 'plain text\n');
  t.match(await read([join(dir, 'x.gz')]), [{ line: 1, problem: /cannot read on from here/ }]);
  t.match(await read([join(dir, 'x.bz2')]), [{ line: 1, problem: /^cannot read on from here, the rest of the file is skipped \(bzip2: .*not a bzip2 file\.\)$/ }]);
});

/** The bzip2 processes running on this file, by their command lines. */
const bzip2sOn = (file: string) => readdirSync('/proc').filter((pid) => {
  try {
    return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(file);
  } catch {
    return false; // gone while listed
  }
});

t.test('.bz2: concatenated streams read on, what follows the last ignored, and a reader that stops early stops bzip2', { skip: hasBzip2() ? false : NO_BZIP2 }, async (t) => {
  const dir = await tempDir(t);
  const joined = join(dir, 'joined.json.bz2');
  await writeFile(joined, Buffer.concat([bzip2(Buffer.from('{"a":1}\n')), bzip2(Buffer.from('{"a":2}\n')), Buffer.from('not bzip2')]));
  t.same(texts(await read([joined])), [[1, '{"a":1}'], [2, '{"a":2}']]);
  // 20 MB of lines from a few KB: the cap stops the reading long before bzip2 could write it all.
  const big = join(dir, 'big.json.bz2');
  await writeFile(big, execFileSync('/bin/sh', ['-c', `yes '{"a":1}' | head -c 20000000 | ${BZIP2} -9`], { maxBuffer: Infinity }));
  const got = await read([big], { maxLineBytes: 1000, maxFileBytes: 1024 * 1024 });
  t.match(got.at(-1), { problem: /^decompressed past 1 MiB/ });
  await waitFor(() => bzip2sOn(big).length === 0, 'bzip2 stopped once its reader stopped', 10_000);
});

t.test('.bz2 without a bzip2 program: one problem saying what to install, then the next file', async (t) => {
  const dir = await tempDir(t);
  await writeFile(join(dir, 'a.json.bz2'), 'whatever\n');
  await writeFile(join(dir, 'b.json'), 'after\n');
  const path = process.env.PATH;
  process.env.PATH = dir;
  t.teardown(() => (process.env.PATH = path));
  t.same(texts(await read([join(dir, 'a.json.bz2'), join(dir, 'b.json')])), [
    [1, 'cannot read on from here, the rest of the file is skipped (no bzip2 program on this machine to read .bz2 files with: install it (Debian: apt-get install bzip2))'],
    [1, 'after'],
  ]);
});

t.test('caps on what comes out: a line too long, a file too big; each ends its file with one problem naming it', async (t) => {
  const dir = await tempDir(t);
  const long = join(dir, 'long.json.gz');
  await writeFile(long, gzipSync(Buffer.concat([Buffer.from('{"a":1}\n'), Buffer.alloc(300_000, 0x20), Buffer.from('\n{"a":2}\n')])));
  t.same(texts(await read([long], { maxLineBytes: 100_000, maxFileBytes: 1e9 })), [[1, '{"a":1}'], [2, 'a line longer than 100000 bytes: not a recording; the rest of the file is skipped']]);
  const big = join(dir, 'big.json');
  await writeFile(big, '{"a":1}\n'.repeat(100_000));
  const got = await read([big], { maxLineBytes: 1000, maxFileBytes: 256 * 1024 });
  t.match(got.at(-1), { file: big, problem: 'decompressed past 262144 bytes: not a recording; the rest of the file is skipped' });
  t.ok(got.length < 40_000, 'stopped there');
});
