import { systemClock, type Clock, type Ticker } from '../lib/clock.js';
import { TokenBucket } from '../lib/token-bucket.js';

/** How often the client asks for a market again after a delta that did not apply: in all, and per market. */
export const RESYNC = { perSecond: 10, perMarketMs: 1000 } as const;

/**
 * Asks for markets again (a subscribe with `since`) after deltas that did not apply, within
 * bounds, so no server, broken or hostile, can make the client send more than RESYNC.perSecond
 * requests a second: per market one at a time, waiting for its answer, and none within
 * RESYNC.perMarketMs of the one before; at most RESYNC.perSecond in all. A market held back by
 * the bounds is owed one, asked for as soon as they allow, so its book does not stay on an image
 * the server has moved on from.
 */
export class Resyncs {
  private readonly waiting = new Set<string>();
  /** When each market was last asked for; entries older than the per-market bound are dropped. */
  private readonly last = new Map<string, number>();
  private readonly owed = new Set<string>();
  private readonly bucket: TokenBucket;
  private timer: Ticker | undefined;

  /** `send` asks for the market, returning the request's answer, or undefined when it is not to be asked for (not connected, no longer wanted). */
  constructor(private readonly send: (mid: string) => Promise<unknown> | undefined, private readonly clock: Clock = systemClock) {
    this.bucket = new TokenBucket(RESYNC.perSecond, clock);
  }

  /** A delta of this market did not apply. */
  ask(mid: string): void {
    if (this.waiting.has(mid) || this.owed.has(mid)) return;
    if (this.tryNow(mid)) return;
    this.owed.add(mid);
    this.schedule();
  }

  /** The market left the book: nothing is owed for it. */
  forget(mid: string): void {
    this.owed.delete(mid);
    this.last.delete(mid);
  }

  /** A new connection resumes every market anyway: nothing is owed any more. */
  reset(): void {
    this.owed.clear();
    this.stop();
  }

  stop(): void {
    this.timer?.stop();
    this.timer = undefined;
  }

  /** Whether the market was asked for (or needs no asking); false when the bounds hold it back. */
  private tryNow(mid: string): boolean {
    const now = this.clock.now();
    const last = this.last.get(mid);
    if ((last !== undefined && now - last < RESYNC.perMarketMs) || !this.bucket.has()) return false;
    const answered = this.send(mid);
    if (!answered) return true;
    this.bucket.spend();
    this.prune(now);
    this.last.set(mid, now);
    this.waiting.add(mid);
    const done = () => this.waiting.delete(mid);
    answered.then(done, done);
    return true;
  }

  private prune(now: number): void {
    if (this.last.size < 64) return;
    for (const [mid, at] of this.last) if (now - at >= RESYNC.perMarketMs) this.last.delete(mid);
  }

  private schedule(): void {
    this.timer ??= this.clock.after(1000 / RESYNC.perSecond, () => {
      this.timer = undefined;
      // One already waiting for its answer brings the newest image: nothing more is owed for it.
      for (const mid of this.owed) if (this.waiting.has(mid) || this.tryNow(mid)) this.owed.delete(mid);
      if (this.owed.size) this.schedule();
    });
  }
}
