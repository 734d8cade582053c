/**
 * Which files share a batch process, how they are split, and what each file's part of a batch's
 * output was: runner.ts's side of batch/main.ts.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { FILE_END, type FileEnd } from './protocol.js';

/**
 * What a contract file reaches, through its own imports or test/ helpers', and a unit file does
 * not: the service, a database, NATS, a browser, a child process left running. A unit file may
 * share a process; a file that starts real components keeps its own, where what it leaves running
 * is stopped with its process group and a failure cannot reach another file.
 */
const REAL = [
  /^node:(worker_threads|cluster)$/,
  /^(pg|playwright-core|uWebSockets\.js)$/,
  /(^|\/)src\/(service|main)\.js$/,
  /(^|\/)src\/db\/(embedded|migrate)\.js$/,
];

/** Each import's bindings (empty for a dynamic one) and what it names. */
const IMPORTS = /\bimport\s*(?:([\w*{}\s,]+?)\s*from\s*)?\(?\s*['"]([^'"]+)['"]/g;

/** A child process the file waits for (`spawnSync`, `execFileSync`: bzip2, a CLI's --help) is its own work; any other may outlive it. */
const waitsOnly = (bindings: string | undefined): boolean => {
  const named = /^\{([^}]*)\}$/.exec(bindings?.trim() ?? '');
  return !!named && named[1].split(',').map((b) => b.trim().split(/\s+/)[0]).filter(Boolean).every((name) => name.endsWith('Sync'));
};

const real = (spec: string, bindings: string | undefined): boolean => REAL.some((re) => re.test(spec)) || (spec === 'node:child_process' && !waitsOnly(bindings));

/** Whether a compiled test file may run in a batch: nothing it imports, or test/ helpers import, starts real components. */
export function isUnitFile(file: string, read: (path: string) => string = (p) => readFileSync(p, 'utf8')): boolean {
  const seen = new Set<string>();
  const reachesReal = (path: string): boolean => {
    if (seen.has(path)) return false;
    seen.add(path);
    for (const [, bindings, spec] of read(path).matchAll(IMPORTS)) {
      if (real(spec, bindings)) return true;
      // The test tree's own modules are followed; src/ is the code under test, judged by the list.
      const next = spec.startsWith('.') ? resolve(dirname(path), spec) : '';
      if (next && !next.includes('/src/') && reachesReal(next)) return true;
    }
    return false;
  };
  return !reachesReal(file);
}

/**
 * The files in `n` batches of about equal recorded time (one second for a file never run), each in
 * path order, none empty.
 */
export function batchesOf(files: readonly string[], n: number, seconds: (file: string) => number | undefined): string[][] {
  const batches = Array.from({ length: Math.min(n, files.length) }, () => ({ files: [] as string[], seconds: 0 }));
  const longestFirst = [...files].sort((a, b) => (seconds(b) ?? 1) - (seconds(a) ?? 1) || a.localeCompare(b));
  for (const file of longestFirst) {
    const lightest = batches.reduce((min, b) => (b.seconds < min.seconds ? b : min));
    lightest.files.push(file);
    lightest.seconds += seconds(file) ?? 1;
  }
  return batches.map((b) => b.files.sort());
}

/** A file's part of a batch's output: how it ended, if it said, and its TAP. */
export interface FilePart {
  readonly end?: FileEnd;
  readonly tap: string;
}

/**
 * The batch's output cut at each file's closing comment. A file without one (the process died or
 * was stopped in it, or before it) has no `end`; the one that was running has what it printed.
 */
export function splitBatch(stdout: string, files: readonly string[]): FilePart[] {
  const parts = new Map<string, FilePart>();
  let from = stdout.startsWith('TAP version') ? stdout.indexOf('\n') + 1 : 0;
  for (let at = stdout.indexOf(`\n${FILE_END}`, from - 1); at >= 0; at = stdout.indexOf(`\n${FILE_END}`, from - 1)) {
    const lineEnd = stdout.indexOf('\n', at + 1);
    const end = JSON.parse(stdout.slice(at + 1 + FILE_END.length, lineEnd < 0 ? undefined : lineEnd)) as FileEnd;
    parts.set(end.file, { end, tap: stdout.slice(from, at + 1) });
    from = lineEnd < 0 ? stdout.length : lineEnd + 1;
  }
  const rest = stdout.slice(from);
  let running = true;
  return files.map((file) => {
    const part = parts.get(file);
    if (part) return part;
    const tap = running ? rest : '';
    running = false;
    return { tap };
  });
}
