import type { JoinAt, SeqAt } from './ledger.js';

/** One event of a socket's ledger, as recorded. */
export interface LedgerEvent {
  at: number;
  op: string;
  body: Record<string, unknown>;
}

/** Where a span starts and ends among its pod's notes (undefined: still open), so a conflated send in the same ms is placed in it or not. */
export interface NoteBounds {
  start: number;
  end: number | undefined;
}

/** How a socket took a market. */
export interface Taking {
  variant: string;
  depth: number;
  conflate: number;
  delta: boolean;
}

/**
 * A stretch in which a socket was on a market's topic: from the image it joined with (`from`,
 * sent it then unless `sent` is false: it held it already) to what it held when it left the
 * topic, dropped the market or closed (`to`; null while still on it, or when its conflation held
 * a newer image back). Unconflated, it got every image in between; conflated, the images its
 * variant sent.
 */
export interface Span extends Taking {
  epoch: string | null;
  from: number | null;
  /** Whether it was sent `from` as it joined. */
  sent: boolean;
  to: number | null;
  start: number;
  end: number | null;
  /** Conflated only: every seq it was sent in the span, in order. */
  seqs?: number[];
  /** Conflated only, set when its `seqs` lists only the first of them: its answer listed as many sends as it lists at most. */
  cut?: true;
}

/** Images skipped while the market was off its topic: it held `from - 1` when it left and joined again with `to + 1`. */
export interface Skip {
  epoch: string;
  from: number;
  to: number;
  start: number;
  end: number;
}

/** A stretch in which a market was told `behind` (stale on its screen): from the notice (`start`) to the `live` after it, the drop or the close (`end`). */
export interface Behind {
  /** Owed since then: the notice's `at`. */
  since: number;
  start: number;
  end: number | null;
}

export interface MarketLedger {
  spans: Span[];
  skipped: Skip[];
  behind: Behind[];
}

/** Off its topic, owed its newest image, since `at`, holding (epoch, seq) (null: none, or not known here). */
export interface Owed {
  at: number;
  epoch: string | null;
  seq: number | null;
  /** Set when it left its topic (it fell behind, or took the market again another way): the span it left, so what it held can be found when it was not known here, and what it missed until it joins again is a skip. */
  left?: Span;
}

/** Where one market stood for the socket at the end of the events read: on its topic or owed, how it took it, and whether it was told `behind`. */
export interface MarketAt {
  how: Taking;
  live?: Span;
  owed?: Owed;
  behind?: Behind;
}

const taking = (b: Record<string, unknown>): Taking => ({ variant: String(b.variant), depth: Number(b.depth), conflate: Number(b.conflate), delta: b.delta === true });

/**
 * Replays a socket's ledger events, in order: per market, the spans it was on the topic, the
 * images it skipped while owed after falling behind, the stretches it was told `behind`, and
 * where each market stood after the last event.
 */
export class LedgerReplay {
  readonly markets = new Map<string, MarketLedger>();
  readonly now = new Map<string, MarketAt>();
  /** Each span's bounds among its pod's notes, when the events read carry their numbers. */
  readonly bounds = new Map<Span, NoteBounds>();
  /** The number of the event being applied. */
  private n: number | undefined;

  /** `n`: the event's number among its pod's notes, when known. */
  apply(e: LedgerEvent, n?: number): void {
    this.n = n;
    const b = e.body;
    const seqs = (b.seqs ?? []) as SeqAt[];
    if (e.op === 'take') for (const [mid, epoch, seq] of seqs) this.take(mid, e.at, epoch, seq, taking(b));
    else if (e.op === 'owe') for (const [mid, epoch, seq] of seqs) this.owe(mid, e.at, epoch, seq);
    else if (e.op === 'join') for (const [mid, epoch, seq, sent] of b.seqs as JoinAt[]) this.join(mid, e.at, epoch, seq, sent);
    else if (e.op === 'drop' || e.op === 'close') for (const [mid, epoch, seq] of seqs) this.drop(mid, e.at, epoch, seq);
    else if (e.op === 'behind') for (const [mid, since] of b.mids as [string, number][]) this.told(mid, e.at, since);
    else if (e.op === 'live') for (const mid of [...(b.mids as string[]), ...((b.stale ?? []) as string[])]) this.settled(mid, e.at);
  }

  private ledger(mid: string): MarketLedger {
    let m = this.markets.get(mid);
    if (!m) this.markets.set(mid, (m = { spans: [], skipped: [], behind: [] }));
    return m;
  }

  /**
   * Took a market, or took it again: owed from now. New, it holds what a resume said; on its
   * topic, what the topic had handed it (the span ends there); owed already, what it held before.
   */
  private take(mid: string, at: number, epoch: string | null, seq: number | null, how: Taking): void {
    const was = this.now.get(mid);
    this.ledger(mid);
    if (was?.owed) {
      was.how = how;
      return;
    }
    if (was?.live) this.close(was.live, at, epoch, seq);
    this.now.set(mid, { how, owed: { at, epoch, seq, left: was?.live }, behind: was?.behind });
  }

  /** Fell behind: off the topic, holding (epoch, seq). */
  private owe(mid: string, at: number, epoch: string | null, seq: number | null): void {
    const was = this.now.get(mid);
    if (!was?.live) return;
    this.close(was.live, at, epoch, seq);
    was.owed = { at, epoch, seq, left: was.live };
    was.live = undefined;
  }

  /** Sent its newest image (epoch, seq), or held it already, and back on the topic: what it missed since it left the topic was skipped. */
  private join(mid: string, at: number, epoch: string | null, seq: number | null, sent: boolean): void {
    const was = this.now.get(mid);
    if (!was?.owed) return;
    const o = was.owed;
    if (o.left && o.epoch !== null && o.epoch === epoch && o.seq !== null && seq !== null && seq > o.seq + 1) {
      this.ledger(mid).skipped.push({ epoch, from: o.seq + 1, to: seq - 1, start: o.at, end: at });
    }
    const span: Span = { epoch, from: seq, sent, to: null, start: at, end: null, ...was.how };
    this.ledger(mid).spans.push(span);
    if (this.n !== undefined) this.bounds.set(span, { start: this.n, end: undefined });
    was.owed = undefined;
    was.live = span;
  }

  /** Dropped, or the socket closed, holding (epoch, seq). */
  private drop(mid: string, at: number, epoch: string | null, seq: number | null): void {
    const was = this.now.get(mid);
    if (!was) return;
    if (was.live) this.close(was.live, at, epoch, seq);
    if (was.behind) was.behind.end = at;
    this.now.delete(mid);
  }

  private told(mid: string, at: number, since: number): void {
    const was = this.now.get(mid);
    if (!was || was.behind) return;
    was.behind = { since, start: at, end: null };
    this.ledger(mid).behind.push(was.behind);
  }

  private settled(mid: string, at: number): void {
    const was = this.now.get(mid);
    if (!was?.behind) return;
    was.behind.end = at;
    was.behind = undefined;
  }

  /** A span ends at `at`, holding (epoch, seq) when that is known and of its epoch. */
  private close(span: Span, at: number, epoch: string | null, seq: number | null): void {
    span.end = at;
    const bounds = this.bounds.get(span);
    if (bounds) bounds.end = this.n;
    if (seq !== null && (span.epoch === null || span.epoch === epoch)) {
      span.epoch = epoch;
      span.to = seq;
    }
  }
}
