/**
 * Capped exponential backoff with jitter, the one way this service waits
 * before trying again (Postgres at start, the LISTEN connection, stored market
 * sets, key reloads, NATS resyncs). Jitter spreads pods that failed together.
 */
export class Backoff {
  private attempt = 0;

  constructor(private readonly minMs = 100, private readonly maxMs = 5000) {}

  /** The next delay: doubling from minMs up to maxMs, each between half and all of it. */
  next(): number {
    const cap = Math.min(this.maxMs, this.minMs * 2 ** this.attempt++);
    return cap / 2 + Math.random() * (cap / 2);
  }

  reset(): void {
    this.attempt = 0;
  }

  get attempts(): number {
    return this.attempt;
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((ok) => setTimeout(ok, ms));

/**
 * sleep that an abort ends at once, so a stopped owner leaves no timer holding the process. Not
 * node:timers/promises: the board's browser bundle uses this file too.
 */
export function wait(ms: number, signal?: AbortSignal): Promise<void> {
  if (!signal) return sleep(ms);
  return new Promise((ok) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      ok();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

interface RetryOptions {
  /** Tries in all, the first included; unlimited when absent. */
  attempts?: number;
  minMs?: number;
  maxMs?: number;
  /** Stops retrying (the last error is thrown) once this says so, e.g. the socket closed. */
  cancelled?(): boolean;
  /** As cancelled, and ends the wait under way at once: the owner stopping. */
  signal?: AbortSignal;
  /** Only errors this accepts are retried; others are thrown at once. */
  retryIf?(err: unknown): boolean;
  /** Told before each wait, for logs. */
  onRetry?(err: unknown, attempt: number, delayMs: number): void;
}

/** Runs fn until it resolves, waiting with backoff between failures. */
export async function retry<T>(fn: () => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const backoff = new Backoff(opts.minMs, opts.maxMs);
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      const attempt = backoff.attempts + 1;
      const given = () => opts.cancelled?.() || opts.signal?.aborted;
      if ((opts.attempts !== undefined && attempt >= opts.attempts) || given() || opts.retryIf?.(err) === false) throw err;
      const delay = backoff.next();
      opts.onRetry?.(err, attempt, delay);
      await wait(delay, opts.signal);
      if (given()) throw err;
    }
  }
}
