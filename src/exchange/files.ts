/**
 * Recorded stream files as one sequence of lines, each with its file and line number: plain
 * text, `.gz` or `.bz2` (by the name's ending), or folders of them (every file inside, at any
 * depth, in name order). A file that cannot be read to its end (a truncated or damaged archive,
 * a file that vanished) yields one problem naming the file and the line it stopped at; the lines
 * before it were yielded, the rest of that file is skipped, and the next file follows.
 */
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { createGunzip } from 'node:zlib';
import unbzip2 from 'unbzip2-stream';

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

/** Longer than any real stream message (a full image of a big market is a few hundred KB). */
const MAX_LINE_BYTES = 16 * 1024 * 1024;

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

function decompressed(file: string): Readable {
  const raw = createReadStream(file);
  let out: Readable;
  if (file.endsWith('.gz')) out = raw.pipe(createGunzip());
  else if (file.endsWith('.bz2')) out = bunzip(raw);
  else return raw;
  // pipe() does not pass the file's own errors (it vanished, it is a folder) on to the decoder.
  raw.on('error', (err) => out.destroy(err));
  return out;
}

/** The bzip2 decoder is an old-style stream: piped into a modern one, it reads like any other and its errors end the read. */
function bunzip(raw: Readable): Readable {
  const decoder = unbzip2();
  const out = new PassThrough();
  decoder.on('error', (err) => out.destroy(err));
  raw.pipe(decoder).pipe(out);
  return out;
}

export async function* readLines(files: readonly string[]): AsyncGenerator<Line | ReadProblem> {
  for (const file of files) yield* linesOf(file);
}

async function* linesOf(file: string): AsyncGenerator<Line | ReadProblem> {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let line = 0;
  let skipping = false;
  try {
    for await (const chunk of decompressed(file)) {
      pending += decoder.write(chunk as Buffer);
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const text = pending.slice(0, nl).replace(/\r$/, '');
        pending = pending.slice(nl + 1);
        line++;
        if (skipping) skipping = false;
        else if (text.trim()) yield { file, line, text };
      }
      if (pending.length > MAX_LINE_BYTES && !skipping) {
        yield { file, line: line + 1, problem: `line is longer than ${MAX_LINE_BYTES} bytes; skipped` };
        skipping = true;
      }
      if (skipping) pending = '';
    }
  } catch (err) {
    yield { file, line: line + 1, problem: `cannot read on from here, the rest of the file is skipped (${(err as Error).message})` };
    return;
  }
  pending += decoder.end();
  if (pending.trim() && !skipping) yield { file, line: line + 1, text: pending };
}
