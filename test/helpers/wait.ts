/**
 * Reads until the check passes or time runs out, then returns the last read:
 * for state that follows a write asynchronously (NOTIFY, reconnects), where a
 * fixed sleep would be either flaky or slow. The caller asserts on the result.
 */
export async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000, every = 20): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, every));
  }
}

/**
 * Waits until the check passes; past `ms` it throws, saying what never happened, so a slow machine
 * fails with a reason instead of a later assertion on state that had not arrived yet. `what` may
 * be a function, to say what was seen by then.
 */
export async function waitFor(check: () => boolean | Promise<boolean>, what: string | (() => string), ms = 30_000, every = 20): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${typeof what === 'string' ? what : what()}: not within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, every));
  }
}
