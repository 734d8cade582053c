import type { OddsMessage, Since } from '../odds/messages.js';
import { isNewer } from '../odds/order.js';

/** How late a market's newest frame was when it arrived, in ms (receipt time less the frame's times). */
export interface ReceiptDelay {
  /** When it arrived, ms since the epoch (this machine's clock). */
  at: number;
  /** From the source's time (`ts`: the exchange's, or the publisher's) to arrival. */
  source: number;
  /** From the service publishing it (`pt`) to arrival. */
  publish: number;
}

/** The epochs of a market's numbering remembered besides the current one (each with its highest seq). */
export const PAST_EPOCHS = 8;

interface HeldFrame {
  frame: OddsMessage;
  at: number;
  /** Earlier epochs of this market and the highest seq kept in each, oldest first. */
  past: [epoch: string, seq: number][];
}

/**
 * A client's book: the newest `odds` frame of each market, kept by the
 * protocol's rule: a frame with a different epoch replaces what is held;
 * within one epoch, the higher `seq` wins. What is kept is always a full
 * image (a delta is applied before it gets here), so it is the whole truth
 * about its market.
 *
 * The rule alone would take back an epoch the market has left with any seq;
 * the book also remembers the highest seq of the market's last PAST_EPOCHS
 * epochs, so that within an epoch no frame older than one kept is ever kept
 * again (a server returns to an epoch only with newer seqs).
 */
export class MarketBook {
  private readonly markets = new Map<string, HeldFrame>();

  /** Keeps the frame if the rule says it is newer; returns whether it did. `at`: when it arrived. */
  apply(frame: OddsMessage, at = Date.now()): boolean {
    const held = this.markets.get(frame.mid);
    if (!held) {
      this.markets.set(frame.mid, { frame, at, past: [] });
      return true;
    }
    if (!isNewer(held.frame, frame.epoch, frame.seq)) return false;
    if (held.frame.epoch !== frame.epoch) {
      const i = held.past.findIndex(([e]) => e === frame.epoch);
      if (i >= 0 && frame.seq <= held.past[i][1]) return false;
      if (i >= 0) held.past.splice(i, 1);
      held.past.push([held.frame.epoch, held.frame.seq]);
      if (held.past.length > PAST_EPOCHS) held.past.shift();
    }
    held.frame = frame;
    held.at = at;
    return true;
  }

  get(mid: string): OddsMessage | undefined {
    return this.markets.get(mid)?.frame;
  }

  /** How late the market's newest frame arrived. */
  delay(mid: string): ReceiptDelay | undefined {
    const held = this.markets.get(mid);
    return held && { at: held.at, source: held.at - held.frame.ts, publish: held.at - held.frame.pt };
  }

  has(mid: string): boolean {
    return this.markets.has(mid);
  }

  /** Forgets the market, its numbering included: one held again starts afresh. */
  delete(mid: string): boolean {
    return this.markets.delete(mid);
  }

  get size(): number {
    return this.markets.size;
  }

  mids(): IterableIterator<string> {
    return this.markets.keys();
  }

  *values(): IterableIterator<OddsMessage> {
    for (const held of this.markets.values()) yield held.frame;
  }

  /**
   * What a resuming subscribe says it holds: the epoch most of the book is in,
   * and the seq of each market in it (of `only`, when given). Stops adding
   * markets at about `maxBytes` of JSON so the request stays under the
   * server's message limit: a market left out just gets its image again.
   */
  since(only?: readonly string[], maxBytes = 32 * 1024): Since | undefined {
    const counts = new Map<string, number>();
    for (const f of this.values()) counts.set(f.epoch, (counts.get(f.epoch) ?? 0) + 1);
    let epoch: string | undefined;
    for (const [e, n] of counts) if (epoch === undefined || n > counts.get(epoch)!) epoch = e;
    if (epoch === undefined) return undefined;
    const seqs: Record<string, number> = {};
    let bytes = 0;
    let any = false;
    for (const mid of only ?? this.markets.keys()) {
      const f = this.get(mid);
      if (!f || f.epoch !== epoch) continue;
      bytes += mid.length + 20;
      if (bytes > maxBytes) break;
      seqs[mid] = f.seq;
      any = true;
    }
    return any ? { epoch, seqs } : undefined;
  }
}
