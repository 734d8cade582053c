/** One event of a socket's ledger, as recorded. */
export interface LedgerEvent {
  at: number;
  op: string;
  body: Record<string, unknown>;
}

/** [mid, epoch, seq] as the ledger writes what a socket holds; null where it is not known there. */
type SeqAt = [string, string | null, number | null];

/**
 * A stretch in which a socket was on a market's topic: from the image it took or caught up with
 * (`from`) to what it held when it dropped the market, fell behind or closed (`to`; null while
 * still on it, or when its conflation held a newer image back). Unconflated, it got every image
 * in between; conflated, the images its variant sent.
 */
export interface Span {
  epoch: string | null;
  from: number | null;
  to: number | null;
  start: number;
  end: number | null;
  variant: string;
  depth: number;
  conflate: number;
  delta: boolean;
  /** Conflated only: every seq it was sent in the span, in order. */
  seqs?: number[];
}

/** Images skipped while the socket was behind: it held `from - 1` and caught up with `to + 1`. */
export interface Skip {
  epoch: string;
  from: number;
  to: number;
  start: number;
  end: number;
}

export interface MarketLedger {
  spans: Span[];
  skipped: Skip[];
}

/** Where one market stood for the socket at the end of the events read: on its topic, behind, or dropped. */
export interface MarketAt {
  live?: Span;
  behind?: { at: number; epoch: string | null; seq: number | null; span: Span };
}

interface Taking {
  variant: string;
  depth: number;
  conflate: number;
  delta: boolean;
}

const taking = (b: Record<string, unknown>): Taking => ({ variant: String(b.variant), depth: Number(b.depth), conflate: Number(b.conflate), delta: b.delta === true });

/**
 * Replays a socket's ledger events, in order: per market, the spans it was on the topic and the
 * images it skipped while behind, and where each market stood after the last event.
 */
export class LedgerReplay {
  readonly markets = new Map<string, MarketLedger>();
  readonly now = new Map<string, MarketAt>();
  /** The variant of each market taken, kept while it is behind or live. */
  private readonly how = new Map<string, Taking>();

  apply(e: LedgerEvent): void {
    const b = e.body;
    if (e.op === 'take') this.take(e.at, b);
    else if (e.op === 'drop') for (const [mid, epoch, seq] of b.seqs as SeqAt[]) this.end(mid, e.at, epoch, seq, false);
    else if (e.op === 'behind') for (const [mid, epoch, seq] of b.seqs as SeqAt[]) this.end(mid, e.at, epoch, seq, true);
    else if (e.op === 'caught') for (const [mid, epoch, seq] of b.seqs as SeqAt[]) this.caught(mid, e.at, epoch, seq);
    else if (e.op === 'close') for (const [mid, epoch, seq] of b.seqs as SeqAt[]) this.end(mid, e.at, epoch, seq, false);
  }

  private ledger(mid: string): MarketLedger {
    let m = this.markets.get(mid);
    if (!m) this.markets.set(mid, (m = { spans: [], skipped: [] }));
    return m;
  }

  private open(mid: string, at: number, epoch: string | null, seq: number | null): void {
    const how = this.how.get(mid)!;
    const span: Span = { epoch, from: seq, to: null, start: at, end: null, ...how };
    this.ledger(mid).spans.push(span);
    this.now.set(mid, { live: span });
  }

  private take(at: number, b: Record<string, unknown>): void {
    const mid = String(b.mid);
    const was = this.now.get(mid);
    // Taken again another way while on the topic: the old span ends where the new one starts.
    if (was?.live) this.close(was.live, at, (b.epoch as string | null) ?? null, (b.seq as number | null) ?? null);
    this.how.set(mid, taking(b));
    if (b.behind === true) {
      const span: Span = { epoch: null, from: null, to: null, start: at, end: at, ...taking(b) };
      this.now.set(mid, { behind: { at, epoch: null, seq: null, span } });
    } else this.open(mid, at, (b.epoch as string | null) ?? null, (b.seq as number | null) ?? null);
  }

  private close(span: Span, at: number, epoch: string | null, seq: number | null): void {
    span.end = at;
    if (seq !== null && (span.epoch === null || span.epoch === epoch)) {
      span.epoch = epoch;
      span.to = seq;
    }
  }

  /** The socket dropped the market, closed, or fell behind holding (epoch, seq). */
  private end(mid: string, at: number, epoch: string | null, seq: number | null, behind: boolean): void {
    const was = this.now.get(mid);
    if (was?.live) this.close(was.live, at, epoch, seq);
    if (behind && was?.live) this.now.set(mid, { behind: { at, epoch, seq, span: was.live } });
    else if (!behind) {
      this.now.delete(mid);
      this.how.delete(mid);
    }
  }

  private caught(mid: string, at: number, epoch: string | null, seq: number | null): void {
    const was = this.now.get(mid)?.behind;
    if (was && was.epoch !== null && was.epoch === epoch && was.seq !== null && seq !== null && seq > was.seq + 1) {
      this.ledger(mid).skipped.push({ epoch, from: was.seq + 1, to: seq - 1, start: was.at, end: at });
    }
    if (this.how.has(mid)) this.open(mid, at, epoch, seq);
  }
}
