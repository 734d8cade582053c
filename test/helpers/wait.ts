/**
 * Reads until the check passes or time runs out, then returns the last read:
 * for state that follows a write asynchronously (NOTIFY, reconnects), where a
 * fixed sleep would be either flaky or slow. The caller asserts on the result.
 */
export async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 5000, every = 20): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, every));
  }
}
