/**
 * Recorded stream files as lines, each with its file and line number: plain text, `.gz` or `.bz2`
 * (by the name's ending), or folders of them (every file inside, at any depth, in name order).
 * Decompression holds memory bounded whatever comes out (zlib's stream; lib/bunzip2.ts), and what
 * comes out is capped: a line longer than `maxLineBytes` or a file past `maxFileBytes`
 * decompressed is not a recording, and the rest of that file is skipped with one problem naming
 * the file. A file that cannot be read to its end (a truncated or damaged archive, a file that
 * vanished) yields one problem naming the file and the line it stopped at; the lines before it
 * were yielded, the rest of that file is skipped, and the next file follows.
 */
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createGunzip } from 'node:zlib';
import { bunzip2 } from '../lib/bunzip2.js';

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

function decompressed(file: string): AsyncIterable<Buffer> {
  const raw = createReadStream(file);
  if (file.endsWith('.bz2')) return bunzip2(raw);
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
  const take = (tail: Buffer): string => {
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
        const text = take(chunk.subarray(start, nl));
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
  const text = take(Buffer.alloc(0));
  if (text.trim()) yield { file, line: line + 1, text };
}
