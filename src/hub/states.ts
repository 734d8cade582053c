import type { FreshnessMessage, MarketStateMessage, ResultMessage } from '../odds/messages.js';

/** The frames kept per market, each the last of its kind. */
export type StateMessage = MarketStateMessage | ResultMessage | FreshnessMessage;

/** A result frame saying nothing: no outcome, no rollback, not void, and no settlement beside. */
const unsettled = (r: ResultMessage): boolean => r.res === '' && !r.rt && !r.ia && r.cert === undefined && r.at === undefined && r.rs === undefined;

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
 * changed since; a socket taking a market afresh is sent where it stands
 * (`current`). Holds every market of the read model from the pod's start: its
 * first load is a change from an empty model, so each market's `market` frame
 * (and each result that says something) is recorded then, before any socket
 * may open, and so holds after a restart as before it. Forgets a market when
 * the read model deletes it. It keeps the messages as they were published,
 * wire keys and all, and compares none of them with another: what changed is
 * decided on the read model's domain objects (relay/reference-frames.ts) and by
 * the freshness owner, and a socket behind is owed these same frames.
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

  /**
   * Where the market stands, for a socket taking it afresh after its image: its last `market`
   * frame unless it says active, not concluded, not recalled and carries no terms, and its last
   * `result` frame unless it says unsettled with no settlement. An open market nobody settled
   * needs nothing beside its image.
   */
  current(mid: string): StateMessage[] {
    const h = this.held.get(mid);
    const out: StateMessage[] = [];
    if (h?.market && (!h.market.s || h.market.go || h.market.rt || h.market.terms)) out.push(h.market);
    if (h?.result && !unsettled(h.result)) out.push(h.result);
    return out;
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
