import type { MarketStateMessage, ResultMessage } from '../odds/messages.js';

interface Held {
  market?: MarketStateMessage;
  marketRev: number;
  result?: ResultMessage;
  resultRev: number;
}

/**
 * The last `market` and `result` frame of each market, with the revision at
 * which it changed. A socket that fell behind remembers the revision it fell
 * behind at and, once it drains, is sent exactly what changed since. Holds
 * one entry per market that ever changed state, and forgets a market when
 * the read model deletes it.
 */
export class MarketStates {
  private readonly held = new Map<string, Held>();
  private rev = 0;

  get revision(): number {
    return this.rev;
  }

  record(msg: MarketStateMessage | ResultMessage): void {
    let h = this.held.get(msg.mid);
    if (!h) this.held.set(msg.mid, (h = { marketRev: 0, resultRev: 0 }));
    if (msg.op === 'market') {
      h.market = msg;
      h.marketRev = ++this.rev;
    } else {
      h.result = msg;
      h.resultRev = ++this.rev;
    }
  }

  /** The frames of a market that changed after `rev`, state first. */
  since(mid: string, rev: number): (MarketStateMessage | ResultMessage)[] {
    const h = this.held.get(mid);
    const out: (MarketStateMessage | ResultMessage)[] = [];
    if (h?.market && h.marketRev > rev) out.push(h.market);
    if (h?.result && h.resultRev > rev) out.push(h.result);
    return out;
  }

  forget(mid: string): void {
    this.held.delete(mid);
  }
}
