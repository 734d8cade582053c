/**
 * How many sockets of a connect request came up and how many failed, for a client process's
 * `connected` answer: each socket is counted once, on the first of its events that settles it
 * (connected, error, close or timeout), however many follow.
 */
export class Outcomes {
  ok = 0;
  failed = 0;

  /** One socket's settling: `finish` counts it and calls `done` the first time; `settled` is true after that or after `drop`. */
  socket(done: () => void): SocketOutcome {
    const outcomes = this;
    return {
      settled: false,
      finish(good: boolean) {
        if (this.settled) return;
        this.settled = true;
        if (good) outcomes.ok++;
        else outcomes.failed++;
        done();
      },
    };
  }
}

export interface SocketOutcome {
  /** Counted already, or handed to a retry that counts it itself. */
  settled: boolean;
  finish(good: boolean): void;
}
