/** What runner.ts and a batch process (main.ts) say to each other. */

/** The files a batch runs, one path a line (in argv, every file's path would name each testdir). */
export const BATCH_ENV = 'TEST_BATCH_FILES';

/** After each file, a root comment: this prefix, then the file's {@link FileEnd} as JSON. */
export const FILE_END = '# batch-file ';

export interface FileEnd {
  /** The path as given. */
  readonly file: string;
  readonly ok: boolean;
  readonly ms: number;
  readonly counts: { total: number; pass: number; fail?: number; skip?: number; todo?: number };
}

/** The compiled entry runner.ts starts. */
export const BATCH_MAIN = new URL('./main.js', import.meta.url).pathname;
