import type { FreshnessMessage, StaleWhy } from '../odds/messages.js';

/** Why the client holds a market's prices as stale: the server's reasons, or its own while it has no connection. */
export type FreshnessReason = StaleWhy | 'disconnected';

/** A market's freshness as the client holds it: live, or stale with why and since when (ms). */
export type MarketFreshness = { mid: string; live: true } | { mid: string; live: false; why: FreshnessReason; since: number };

/**
 * The freshness of each market, by what the server said (`freshness` frames) and what the client
 * knows itself: without a connection every market it holds is stale (`disconnected`), and a
 * market is live again once its subscribe was answered on the new connection, unless the server
 * says otherwise with the image (just before it). Every market is live until told otherwise, so only stale
 * markets are kept.
 */
export class FreshnessBook {
  private readonly stale = new Map<string, MarketFreshness & { live: false }>();
  /** Since when what the client reads has arrived later than the bound (its own judgement); undefined while timely. */
  private lagging: number | undefined;

  get(mid: string): MarketFreshness {
    return this.stale.get(mid) ?? (this.lagging === undefined ? { mid, live: true } : { mid, live: false, why: 'behind', since: this.lagging });
  }

  /**
   * What the client reads arrives later than the bound (its `clock` frames say so, or stopped
   * coming): every market it holds that the server has not said is stale is `behind`, until it
   * is timely again. Returns those that changed.
   */
  late(mids: Iterable<string>, since: number): MarketFreshness[] {
    if (this.lagging !== undefined) return [];
    this.lagging = since;
    return [...mids].filter((mid) => !this.stale.has(mid)).map((mid) => this.get(mid));
  }

  /** What the client reads is timely again: the markets behind only for that are live. Returns those that changed. */
  timely(mids: Iterable<string>): MarketFreshness[] {
    if (this.lagging === undefined) return [];
    this.lagging = undefined;
    return [...mids].filter((mid) => !this.stale.has(mid)).map((mid) => ({ mid, live: true }));
  }

  /** A `freshness` frame: the market's new state, or undefined when it was already so. */
  apply(msg: FreshnessMessage): MarketFreshness | undefined {
    return msg.live || !msg.why ? this.live(msg.mid) : this.mark(msg.mid, msg.why, msg.at);
  }

  /** The connection is gone: every market held is stale until it is answered again. Returns those that changed. */
  disconnected(mids: Iterable<string>, now: number): MarketFreshness[] {
    const changed: MarketFreshness[] = [];
    for (const mid of new Set([...mids, ...this.stale.keys()])) {
      const state = this.mark(mid, 'disconnected', now);
      if (state) changed.push(state);
    }
    return changed;
  }

  /** A subscribe was answered on a new connection: those of `mids` stale only for want of one are live again. Returns those that changed. */
  resubscribed(mids: Iterable<string> | 'all'): MarketFreshness[] {
    const changed: MarketFreshness[] = [];
    for (const mid of mids === 'all' ? [...this.stale.keys()] : mids) {
      if (this.stale.get(mid)?.why === 'disconnected') changed.push(this.live(mid)!);
    }
    return changed;
  }

  delete(mid: string): void {
    this.stale.delete(mid);
  }

  private mark(mid: string, why: FreshnessReason, since: number): MarketFreshness | undefined {
    const held = this.stale.get(mid);
    if (held?.why === why) return undefined;
    const state = { mid, live: false as const, why, since };
    this.stale.set(mid, state);
    return state;
  }

  /** The server's word that it is live: live, or `behind` while what the client reads is late. */
  private live(mid: string): MarketFreshness | undefined {
    return this.stale.delete(mid) ? this.get(mid) : undefined;
  }
}
