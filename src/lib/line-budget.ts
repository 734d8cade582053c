import { systemClock, type Clock } from './clock.js';

/**
 * A bounded rate for log lines about things outsiders can repeat at will (bad
 * messages, refusals): at most `lines` per `intervalMs`, and the next line let
 * through says how many were held back, so a flood costs a few lines, not
 * the disk, and nothing goes unmentioned.
 */
export class LineBudget {
  private windowStart = Number.NEGATIVE_INFINITY;
  private used = 0;
  private held = 0;

  constructor(private readonly lines: number, private readonly intervalMs: number, private readonly clock: Pick<Clock, 'now'> = systemClock) {}

  /** Undefined: stay quiet. A number: write the line, saying this many were held back since the last one. */
  spend(): number | undefined {
    const now = this.clock.now();
    if (now - this.windowStart >= this.intervalMs) {
      this.windowStart = now;
      this.used = 0;
    }
    if (this.used >= this.lines) {
      this.held++;
      return undefined;
    }
    this.used++;
    const held = this.held;
    this.held = 0;
    return held;
  }
}
