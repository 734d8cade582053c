/** How long one minimum is kept before a newer window replaces it: a drifting clock is followed within two. */
const WINDOW_MS = 60_000;

/**
 * The server's clock as a client sees it, from the times the frames it already gets carry (a
 * `clock` or `hb` frame's `ts`, an odds frame's `pt`): each was stamped no later than it was sent,
 * so the least (arrival − stamp) seen is the clocks' offset plus the quickest way across the link.
 * How much later than that a frame stamped when it was sent is read is how late everything read
 * with it is. The least is kept over a window and the one before, so a clock that drifts, or a
 * link that got slower for good, is followed.
 */
export class ServerClock {
  private current = Infinity;
  private previous = Infinity;
  private windowStart: number | undefined;

  /** A frame stamped `serverMs` by the server arrived at `localMs`. */
  observe(serverMs: number, localMs: number): void {
    if (this.windowStart === undefined || localMs - this.windowStart >= WINDOW_MS) {
      this.previous = this.current;
      this.current = Infinity;
      this.windowStart = localMs;
    }
    this.current = Math.min(this.current, localMs - serverMs);
  }

  /** How much later than its quickest a frame stamped `serverMs` as it was sent was read at `localMs`; 0 before anything was seen. */
  lateness(serverMs: number, localMs: number): number {
    const offset = Math.min(this.current, this.previous);
    return offset === Infinity ? 0 : Math.max(0, localMs - serverMs - offset);
  }

  /** The server's time now, as far as the client can tell (the quickest frame's way across the link left out). */
  now(localMs: number): number | undefined {
    const offset = Math.min(this.current, this.previous);
    return offset === Infinity ? undefined : localMs - offset;
  }
}
