/**
 * Which files share a batch process, how they are split, and what each file's part of a batch's
 * output was: runner.ts's side of batch/main.ts.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { FILE_END, type FileEnd } from './protocol.js';

/**
 * What a contract file reaches, through its own imports or test/ helpers', and a unit file does
 * not: the modules that start the service, the embedded Postgres or migrations, a database
 * client, a browser, uWS, worker threads, or a child process left running. src/ is the code under
 * test: judged by this list, not followed (a unit test of the pool loads `pg` through it and
 * connects nowhere). A unit file may share a process; a file that starts real components keeps
 * its own, where what it leaves running is stopped with its process group and a failure cannot
 * reach another file.
 */
const REAL = [
  /^(node:)?(worker_threads|cluster)$/,
  /^(pg|playwright-core|uWebSockets\.js)$/,
  /(^|\/)src\/(service|main)\.js$/,
  /(^|\/)src\/db\/(embedded|migrate)\.js$/,
];

/** Each import's or re-export's bindings (none for a dynamic import or a bare one) and what it names. */
const IMPORTS = /\b(?:import|export)\s*(?:([\w$*{}\s,]+?)\s*from\s*)?\(?\s*['"]([^'"]+)['"]/g;

/** A child process the file waits for (`spawnSync`, `execFileSync`: bzip2, a CLI's --help) is its own work; any other may outlive it. */
const waitsOnly = (bindings: string | undefined): boolean => {
  const named = /^\{([^}]*)\}$/.exec(bindings?.trim() ?? '');
  return !!named && named[1].split(',').map((b) => b.trim().split(/\s+/)[0]).filter(Boolean).every((name) => name.endsWith('Sync'));
};

const real = (spec: string, bindings: string | undefined): boolean =>
  REAL.some((re) => re.test(spec)) || (/^(node:)?child_process$/.test(spec) && !waitsOnly(bindings));

const TESTS = '/dist/test/';

/**
 * Whether a compiled test file may run in a batch: nothing it imports, or the test tree's modules
 * it reaches import, starts real components. A file that cannot be read is not one (run alone, it
 * fails there by name).
 */
export function isUnitFile(file: string, read: (path: string) => string = (p) => readFileSync(p, 'utf8')): boolean {
  // The test tree this file is in (dist/test/ of its checkout, wherever that is); its own folder for a file outside one.
  const at = file.lastIndexOf(TESTS);
  const tree = at >= 0 ? file.slice(0, at + TESTS.length) : dirname(file) + '/';
  const seen = new Set<string>();
  const reachesReal = (path: string): boolean => {
    if (seen.has(path)) return false;
    seen.add(path);
    for (const [, bindings, spec] of read(path).matchAll(IMPORTS)) {
      if (real(spec, bindings)) return true;
      const next = spec.startsWith('.') ? resolve(dirname(path), spec) : '';
      if (next.startsWith(tree) && reachesReal(next)) return true;
    }
    return false;
  };
  try {
    return !reachesReal(file);
  } catch {
    return false;
  }
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

/** The file end a marker at `at` says, or undefined for text that only looks like one. */
function endAt(stdout: string, at: number, files: ReadonlySet<string>): { end: FileEnd; next: number } | undefined {
  const lineEnd = stdout.indexOf('\n', at);
  const next = lineEnd < 0 ? stdout.length : lineEnd + 1;
  try {
    const end = JSON.parse(stdout.slice(at + FILE_END.length, lineEnd < 0 ? undefined : lineEnd)) as FileEnd;
    return files.has(end?.file) ? { end, next } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The batch's output cut at each file's closing comment (found anywhere in a line, so output a
 * file left unterminated does not hide it). A file without one (the process died or was stopped
 * in it, or before it) has no `end`; the one that was running has what it printed.
 */
export function splitBatch(stdout: string, files: readonly string[]): FilePart[] {
  const parts = new Map<string, FilePart>();
  const names = new Set(files);
  let from = stdout.startsWith('TAP version') ? stdout.indexOf('\n') + 1 : 0;
  for (let at = stdout.indexOf(FILE_END, from); at >= 0; at = stdout.indexOf(FILE_END, at + 1)) {
    const found = endAt(stdout, at, names);
    if (!found) continue;
    parts.set(found.end.file, { end: found.end, tap: stdout.slice(from, at) });
    from = found.next;
    at = from - 1;
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
