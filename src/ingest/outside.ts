import { goneMarkets, type ModelChange } from '../refdata/model.js';

/** Who sent a batch: the demo simulator, or any other publisher (socket, HTTP, import). */
export type Sender = 'simulator' | 'publisher';

/**
 * Markets some publisher other than the simulator has sent odds for: the
 * simulator leaves them alone from then on. Only markets that exist get in
 * (ingest refuses odds for unknown ones), and a market leaves the set when it
 * leaves the read model, so the set never outgrows the markets held.
 */
export class OutsideFeeds {
  private readonly fed = new Set<string>();

  claim(mid: string): void {
    this.fed.add(mid);
  }

  has(mid: string): boolean {
    return this.fed.has(mid);
  }

  /** The read model's changes: markets (and nested markets) that are gone are forgotten. */
  forgetGone(changes: readonly ModelChange[]): void {
    if (!this.fed.size) return;
    for (const mid of goneMarkets(changes)) this.fed.delete(mid);
  }
}
