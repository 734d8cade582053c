import type { FreshnessMessage } from '../odds/messages.js';

/**
 * Conflation as a queue per interval: a market that changes during an
 * interval is deferred, and at the end of the interval its owner (the
 * broadcaster, which runs one timer per interval in use, never one per
 * socket) drains what was deferred and sends each market's newest image once to
 * every variant of that interval. Intervals are presets (session.ts), so
 * there are few of them.
 */
export class Conflator {
  private readonly groups = new Map<number, Map<string, number>>();
  /**
   * Per interval, a market's `freshness` frame saying it is live again, held while its image is:
   * a socket is told a market is live only with (after) the image that makes it so.
   */
  private readonly held = new Map<number, Map<string, FreshnessMessage>>();

  /**
   * A market changed (or, with no update, needs its frame sent again); its subscribers at this
   * interval get it at the end of the interval. True when the interval had nothing queued and no
   * group: its owner starts the interval's timer.
   */
  defer(mid: string, conflate: number, updates = 1): boolean {
    let dirty = this.groups.get(conflate);
    const started = !dirty;
    if (!dirty) this.groups.set(conflate, (dirty = new Map()));
    dirty.set(mid, (dirty.get(mid) ?? 0) + updates);
    return started;
  }

  /**
   * The markets deferred in the interval that just ended, each with how many updates it had; none
   * (undefined) when the interval was quiet, and the interval is forgotten, so its timer may stop.
   */
  drain(conflate: number): Map<string, number> | undefined {
    const dirty = this.groups.get(conflate);
    if (!dirty?.size) {
      this.groups.delete(conflate);
      return undefined;
    }
    this.groups.set(conflate, new Map());
    return dirty;
  }

  /** Whether the interval still holds the market back: its subscribers at that interval were not yet sent its newest image. */
  holds(mid: string, conflate: number): boolean {
    return this.groups.get(conflate)?.has(mid) ?? false;
  }

  /**
   * A `freshness` frame for the market's sockets at this interval: one saying live waits for the
   * image the interval holds (returns true: held, sent by `release`); any other goes now, and a
   * live one held before it is dropped.
   */
  hold(msg: FreshnessMessage, conflate: number): boolean {
    const held = this.held.get(conflate);
    held?.delete(msg.mid);
    if (!msg.live || !this.holds(msg.mid, conflate)) return false;
    if (held) held.set(msg.mid, msg);
    else this.held.set(conflate, new Map([[msg.mid, msg]]));
    return true;
  }

  /** The `freshness` frame held for the market's image at this interval, now that the image went out. */
  release(mid: string, conflate: number): FreshnessMessage | undefined {
    const held = this.held.get(conflate);
    const msg = held?.get(mid);
    if (msg) held!.delete(mid);
    if (held?.size === 0) this.held.delete(conflate);
    return msg;
  }

  clear(): void {
    this.groups.clear();
    this.held.clear();
  }
}
