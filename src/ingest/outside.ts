import type { ModelChange } from '../refdata/model.js';
import type { Market } from '../refdata/types.js';

/** Who sent a batch: the demo simulator, or any other publisher (socket, HTTP, import). */
export type Sender = 'simulator' | 'publisher';

const mids = (m: Market | undefined): string[] => (m ? [m.mid, ...(m.m ?? []).map((n) => n.mid)] : []);

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
    for (const c of changes) {
      if (c.kind !== 'market' || !c.before) continue;
      const kept = new Set(mids(c.after));
      for (const mid of mids(c.before)) if (!kept.has(mid)) this.fed.delete(mid);
    }
  }
}
