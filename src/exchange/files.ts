/**
 * Recorded stream files as lines, each with its file and line number: plain text, `.gz` or `.bz2`
 * (by the name's ending), or folders of them (every file inside, at any depth, in name order).
 * Decompression holds memory bounded whatever comes out (zlib's stream; the system's `bzip2`
 * through a pipe), and what comes out is capped: a line longer than `maxLineBytes` or a file past `maxFileBytes`
 * decompressed is not a recording, and the rest of that file is skipped with one problem naming
 * the file. A file that cannot be read to its end (a truncated or damaged archive, a file that
 * vanished) yields one problem naming the file and the line it stopped at; the lines before it
 * were yielded, the rest of that file is skipped, and the next file follows.
 */
import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createGunzip } from 'node:zlib';

export interface Line {
  file: string;
  /** 1-based. */
  line: number;
  text: string;
}

export interface ReadProblem {
  file: string;
  line: number;
  problem: string;
}

export interface ReadLimits {
  /** Longer than any real stream message (a full image of a big market is a few hundred KB). */
  maxLineBytes: number;
  /** Far above a market's recording (a busy full-depth market is a few hundred MB). */
  maxFileBytes: number;
}

export const READ_LIMITS: Readonly<ReadLimits> = Object.freeze({ maxLineBytes: 16 * 1024 * 1024, maxFileBytes: 8 * 1024 ** 3 });

const MiB = 1024 * 1024;
const size = (bytes: number) => (bytes % (1024 * MiB) === 0 ? `${bytes / (1024 * MiB)} GiB` : bytes % MiB === 0 ? `${bytes / MiB} MiB` : `${bytes} bytes`);

/** Every file the paths name, folders expanded in name order. Throws for a path that does not exist. */
export async function expand(paths: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const path of paths) {
    if (!(await stat(path)).isDirectory()) {
      out.push(path);
      continue;
    }
    const names = (await readdir(path)).sort();
    out.push(...(await expand(names.map((n) => join(path, n)))));
  }
  return out;
}

/** What a .bz2 file needs on this machine. */
export const BZIP2_PROGRAM = 'bzip2';

/**
 * A .bz2 file decompressed by the system's `bzip2 -dc`, read from its pipe: bzip2 holds one block
 * (about 3.7 MB decompressing), the pipe 64 KiB, and bzip2 stops when the pipe is full, so however
 * much a few bytes stand for, it comes out only as fast as it is read. A reader that stops early
 * stops bzip2. bzip2 checks every block's CRC, reads concatenated streams (as pbzip2 writes) on, and
 * ignores what follows the last one. Its own C decoder, not one of ours: on a 1.4 MB recording of
 * 8.3 MB it takes about half the CPU the hand-written JavaScript decoder this replaced did.
 */
async function* bunzip2(file: string): AsyncGenerator<Buffer> {
  const child = spawn(BZIP2_PROGRAM, ['-dc', '--', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let said = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    if (said.length < 4096) said += text;
  });
  const ended = new Promise<string | undefined>((done) => {
    child.once('error', (err: NodeJS.ErrnoException) =>
      done(err.code === 'ENOENT' ? `no ${BZIP2_PROGRAM} program on this machine to read .bz2 files with: install it (Debian: apt-get install bzip2)` : err.message));
    child.once('close', (code, signal) => {
      const first = said.split('\n').map((l) => l.trim()).find((l) => l && !/trailing garbage/.test(l));
      done(code === 0 ? undefined : (first?.replace(/;$/, '') ?? `bzip2 stopped (${signal ?? `exit ${code}`})`));
    });
  });
  try {
    yield* child.stdout;
    const failed = await ended;
    if (failed) throw new Error(failed);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill();
  }
}

function decompressed(file: string): AsyncIterable<Buffer> {
  if (file.endsWith('.bz2')) return bunzip2(file);
  const raw = createReadStream(file);
  if (!file.endsWith('.gz')) return raw;
  const out = raw.pipe(createGunzip());
  // pipe() does not pass the file's own errors (it vanished, it is a folder) on to the decoder,
  // nor the decoder's end (a cap reached) back to the file.
  raw.on('error', (err) => out.destroy(err));
  out.on('close', () => raw.destroy());
  return out;
}

/** One file's lines, in order, with at most one problem, last. */
export async function* linesOf(file: string, limits: ReadLimits = READ_LIMITS): AsyncGenerator<Line | ReadProblem> {
  // The line being read, as bytes: each chunk is searched once for its line ends (LF never occurs inside a UTF-8 character).
  let parts: Buffer[] = [];
  let held = 0;
  let line = 0;
  let total = 0;
  const complete = (tail: Buffer): string => {
    const text = (parts.length ? Buffer.concat([...parts, tail]) : tail).toString('utf8');
    parts = [];
    held = 0;
    return text.endsWith('\r') ? text.slice(0, -1) : text;
  };
  try {
    for await (const chunk of decompressed(file)) {
      total += chunk.length;
      if (total > limits.maxFileBytes) {
        yield { file, line: line + 1, problem: `decompressed past ${size(limits.maxFileBytes)}: not a recording; the rest of the file is skipped` };
        return;
      }
      let start = 0;
      for (let nl = chunk.indexOf(0x0a); nl >= 0; nl = chunk.indexOf(0x0a, start)) {
        const text = complete(chunk.subarray(start, nl));
        start = nl + 1;
        line++;
        if (text.trim()) yield { file, line, text };
      }
      if (start < chunk.length) {
        parts.push(chunk.subarray(start));
        held += chunk.length - start;
      }
      if (held > limits.maxLineBytes) {
        yield { file, line: line + 1, problem: `a line longer than ${size(limits.maxLineBytes)}: not a recording; the rest of the file is skipped` };
        return;
      }
    }
  } catch (err) {
    yield { file, line: line + 1, problem: `cannot read on from here, the rest of the file is skipped (${(err as Error).message})` };
    return;
  }
  const text = complete(Buffer.alloc(0));
  if (text.trim()) yield { file, line: line + 1, text };
}
