import type { Clock, Ticker } from './clock.js';
import type { Component } from './component.js';

/**
 * The process's own event-loop delay, from a timer's drift: how much later
 * than due a timer set every `everyMs` fires. Busy while the last drift
 * passed `maxMs`, eased at the first tick on time again. It measures only
 * this process (a socket that does not read costs it nothing), so what waits
 * on it waits only while the process itself cannot keep up.
 */
export class LoopDelay implements Component {
  readonly name = 'event-loop delay';
  private timer: Ticker | undefined;
  private last = 0;
  private drift = 0;
  private waiters: (() => void)[] = [];

  constructor(private readonly maxMs: number, private readonly clock: Clock, private readonly everyMs = 50) {}

  start(): void {
    this.last = this.clock.now();
    this.timer ??= this.clock.every(this.everyMs, () => this.tick());
  }

  stop(): void {
    this.timer?.stop();
    this.timer = undefined;
    this.drift = 0;
    this.release();
  }

  /** The last drift measured, in ms. */
  get ms(): number {
    return this.drift;
  }

  busy(): boolean {
    return this.drift > this.maxMs;
  }

  eased(): Promise<void> {
    return this.busy() ? new Promise((ok) => this.waiters.push(ok)) : Promise.resolve();
  }

  private tick(): void {
    const now = this.clock.now();
    this.drift = Math.max(0, now - this.last - this.everyMs);
    this.last = now;
    if (!this.busy()) this.release();
  }

  private release(): void {
    for (const ok of this.waiters.splice(0)) ok();
  }
}
