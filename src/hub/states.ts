import type { FreshnessMessage, MarketStateMessage, ResultMessage } from '../odds/messages.js';

/** The frames kept per market, each the last of its kind. */
export type StateMessage = MarketStateMessage | ResultMessage | FreshnessMessage;

interface KeptStates {
  market?: MarketStateMessage;
  marketRev: number;
  result?: ResultMessage;
  resultRev: number;
  freshness?: FreshnessMessage;
  freshnessRev: number;
}

/**
 * The last `market`, `result` and `freshness` frame of each market, with the
 * revision at which it changed. A socket that fell behind remembers the
 * revision it fell behind at and, once it drains, is sent exactly what
 * changed since. Holds one entry per market that ever changed state, and
 * forgets a market when the read model deletes it. It keeps the messages as
 * they were published, wire keys and all, and compares none of them: what
 * changed is decided on the read model's domain objects (relay/reference-frames.ts)
 * and by the freshness owner, and a socket behind is owed these same frames.
 */
export class MarketStates {
  private readonly held = new Map<string, KeptStates>();
  private rev = 0;

  get revision(): number {
    return this.rev;
  }

  record(msg: StateMessage): void {
    let h = this.held.get(msg.mid);
    if (!h) this.held.set(msg.mid, (h = { marketRev: 0, resultRev: 0, freshnessRev: 0 }));
    if (msg.op === 'market') {
      h.market = msg;
      h.marketRev = ++this.rev;
    } else if (msg.op === 'result') {
      h.result = msg;
      h.resultRev = ++this.rev;
    } else {
      h.freshness = msg;
      h.freshnessRev = ++this.rev;
    }
  }

  /** The frames of a market that changed after `rev`, state first, freshness last. */
  since(mid: string, rev: number): StateMessage[] {
    const h = this.held.get(mid);
    const out: StateMessage[] = [];
    if (h?.market && h.marketRev > rev) out.push(h.market);
    if (h?.result && h.resultRev > rev) out.push(h.result);
    if (h?.freshness && h.freshnessRev > rev) out.push(h.freshness);
    return out;
  }

  /** The market's last `market` frame when it carries terms: what a subscribe's image is followed by, so a new subscriber holds them. */
  terms(mid: string): MarketStateMessage | undefined {
    const m = this.held.get(mid)?.market;
    return m?.terms ? m : undefined;
  }

  /** The market's last freshness frame when it says stale: what a subscribe's image is followed by. */
  stale(mid: string): FreshnessMessage | undefined {
    const f = this.held.get(mid)?.freshness;
    return f && !f.live ? f : undefined;
  }

  /** Every market's last frames: where each stands now. */
  *all(): Iterable<StateMessage> {
    for (const h of this.held.values()) {
      if (h.market) yield h.market;
      if (h.result) yield h.result;
      if (h.freshness) yield h.freshness;
    }
  }

  forget(mid: string): void {
    this.held.delete(mid);
  }
}
