/**
 * Time as the parts that keep it need it: the current time, a repeating timer and a one-off one.
 * The service runs on `systemClock`; a test hands in a clock it moves itself, so nothing it judges
 * depends on how busy the machine is. Every limit, bound and timer of the service reads this one
 * interface: the token buckets, the admission and socket budgets, freshness and the feed's
 * monitor, the loop delay, the hub's heartbeats and sweeps, the exchange's publisher.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `tick` every `ms` until stopped; never keeps a stopping process alive. */
  every(ms: number, tick: () => void): Ticker;
  /** Calls `done` once, `ms` from now, unless stopped first; never keeps a stopping process alive. */
  after(ms: number, done: () => void): Ticker;
}

export interface Ticker {
  stop(): void;
}

/** Node's timers can be left out of what keeps the process alive; a browser's (the client package's) have nothing to leave. */
function unref<T>(timer: T): T {
  (timer as { unref?: () => void }).unref?.();
  return timer;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  every(ms, tick) {
    const timer = unref(setInterval(tick, ms));
    return { stop: () => clearInterval(timer) };
  },
  after(ms, done) {
    const timer = unref(setTimeout(done, ms));
    return { stop: () => clearTimeout(timer) };
  },
};
