import type { Clock, Ticker } from '../../src/lib/clock.js';

interface Timer {
  /** 0 for a one-off. */
  readonly ms: number;
  at: number;
  /** Timers due at once run in the order they were set. */
  readonly seq: number;
  readonly run: () => void;
  stopped: boolean;
}

/**
 * A clock the test moves: `advance` runs every timer that falls due, in order, each at its own
 * time, so what a test judges never depends on how busy the machine is. `stall` moves time on
 * without running anything, as a blocked event loop does: the timers due meanwhile run late, at
 * the next `advance`.
 */
export class FakeClock implements Clock {
  private timers: Timer[] = [];
  private seq = 0;
  constructor(private time = 1_800_000_000_000) {}

  now(): number {
    return this.time;
  }

  every(ms: number, tick: () => void): Ticker {
    return this.add(ms, this.time + ms, tick);
  }

  after(ms: number, done: () => void): Ticker {
    return this.add(0, this.time + ms, done);
  }

  /** The periods of the repeating timers running now. */
  periods(): number[] {
    return this.timers.filter((t) => !t.stopped && t.ms > 0).map((t) => t.ms);
  }

  /** One-off timers waiting to run. */
  pending(): number {
    return this.timers.filter((t) => !t.stopped && t.ms === 0).length;
  }

  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      this.timers = this.timers.filter((t) => !t.stopped);
      const next = this.timers.reduce<Timer | undefined>((a, b) => (!a || b.at < a.at || (b.at === a.at && b.seq < a.seq) ? b : a), undefined);
      if (!next || next.at > end) break;
      this.time = Math.max(this.time, next.at);
      // As Node's setInterval: the next run is a period after this one ran, late or not.
      if (next.ms > 0) next.at = this.time + next.ms;
      else next.stopped = true;
      next.run();
    }
    this.time = end;
  }

  stall(ms: number): void {
    this.time += ms;
  }

  private add(ms: number, at: number, run: () => void): Ticker {
    const t: Timer = { ms, at, seq: ++this.seq, run, stopped: false };
    this.timers.push(t);
    return { stop: () => (t.stopped = true) };
  }
}
