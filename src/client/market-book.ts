import type { OddsMessage, Since } from '../odds/messages.js';
import { isNewer } from '../odds/order.js';

/**
 * A client's book: the newest `odds` frame of each market, kept by the
 * protocol's rule: a frame with a different epoch replaces what is held;
 * within one epoch, the higher `seq` wins. What is kept is always a full
 * image (a delta is applied before it gets here), so it is the whole truth
 * about its market.
 */
export class MarketBook {
  private readonly markets = new Map<string, OddsMessage>();

  /** Keeps the frame if the rule says it is newer; returns whether it did. */
  apply(frame: OddsMessage): boolean {
    if (!isNewer(this.markets.get(frame.mid), frame.epoch, frame.seq)) return false;
    this.markets.set(frame.mid, frame);
    return true;
  }

  get(mid: string): OddsMessage | undefined {
    return this.markets.get(mid);
  }

  has(mid: string): boolean {
    return this.markets.has(mid);
  }

  delete(mid: string): boolean {
    return this.markets.delete(mid);
  }

  get size(): number {
    return this.markets.size;
  }

  mids(): IterableIterator<string> {
    return this.markets.keys();
  }

  values(): IterableIterator<OddsMessage> {
    return this.markets.values();
  }

  /**
   * What a resuming subscribe says it holds: the epoch most of the book is in,
   * and the seq of each market in it (of `only`, when given). Stops adding
   * markets at about `maxBytes` of JSON so the request stays under the
   * server's message limit: a market left out just gets its image again.
   */
  since(only?: readonly string[], maxBytes = 32 * 1024): Since | undefined {
    const counts = new Map<string, number>();
    for (const f of this.markets.values()) counts.set(f.epoch, (counts.get(f.epoch) ?? 0) + 1);
    let epoch: string | undefined;
    for (const [e, n] of counts) if (epoch === undefined || n > counts.get(epoch)!) epoch = e;
    if (epoch === undefined) return undefined;
    const seqs: Record<string, number> = {};
    let bytes = 0;
    let any = false;
    for (const mid of only ?? this.markets.keys()) {
      const f = this.markets.get(mid);
      if (!f || f.epoch !== epoch) continue;
      bytes += mid.length + 20;
      if (bytes > maxBytes) break;
      seqs[mid] = f.seq;
      any = true;
    }
    return any ? { epoch, seqs } : undefined;
  }
}
