/**
 * Time as the parts that keep it need it: the current time, and a repeating timer. The service
 * runs on `systemClock`; a test hands in a clock it moves itself, so nothing it judges depends on
 * how busy the machine is.
 */
export interface Clock {
  now(): number;
  /** Calls `tick` every `ms` until stopped; never keeps a stopping process alive. */
  every(ms: number, tick: () => void): Ticker;
}

export interface Ticker {
  stop(): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  every(ms, tick) {
    const timer = setInterval(tick, ms).unref();
    return { stop: () => clearInterval(timer) };
  },
};
