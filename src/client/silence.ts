import { systemClock, type Clock, type Ticker } from '../lib/clock.js';

/**
 * Finds a dead peer: the server sends a heartbeat after `hbMs` without any
 * frame, so two intervals without one mean the connection is gone, even when
 * the socket has not noticed (a half-open TCP connection never errors). One
 * timer per connection, moved on only when it fires, so frames cost a store.
 */
export class Silence {
  private last = 0;
  private timer: Ticker | undefined;

  constructor(private readonly hbMs: number, private readonly dead: (silentMs: number) => void, private readonly clock: Clock = systemClock) {}

  start(): void {
    this.heard();
    this.check(2 * this.hbMs);
  }

  heard(): void {
    this.last = this.clock.now();
  }

  stop(): void {
    this.timer?.stop();
  }

  private check(inMs: number): void {
    this.timer?.stop();
    this.timer = this.clock.after(inMs, () => {
      const silent = this.clock.now() - this.last;
      if (silent < 2 * this.hbMs) this.check(2 * this.hbMs - silent);
      else this.dead(silent);
    });
  }
}
