/** A benchmark's process: its main, its progress lines, its pauses. */

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Runs a benchmark's main and exits with its code (0 when it returns none), or prints the error
 * and exits 1: a benchmark leaves child processes and timers behind that would keep it alive.
 */
export function runMain(name: string, main: () => Promise<number | void>): void {
  main().then(
    (code) => process.exit(code ?? 0),
    (err: Error) => {
      process.stderr.write(`${name} failed: ${err.stack ?? err.message}\n`);
      process.exit(1);
    },
  );
}

export function log(msg: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}
