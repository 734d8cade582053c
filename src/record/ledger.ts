import type { RecordTaps } from './taps.js';

/** How a socket takes a market, as the ledger writes it: the variant's key (its conflated sends are recorded by it), depth, conflation, deltas. */
export interface LedgerVariant {
  readonly key: string;
  readonly depth: number;
  readonly conflate: number;
  readonly delta: boolean;
}

/** An image's place in its market's order. */
export interface Numbered {
  readonly epoch: string;
  readonly seq: number;
}

/** A subscriber socket as the ledger sees it (the hub's Session is one). */
export interface LedgerSocket {
  readonly id: number;
  readonly keyId: string;
  readonly client: string;
  readonly format: string;
  readonly hbMs: number;
  readonly closed: boolean;
  /** Each market it takes and how. */
  readonly markets: ReadonlyMap<string, LedgerVariant>;
  /** While it is behind: what each market had been sent when it fell behind. */
  readonly lag: { readonly seqs: ReadonlyMap<string, Numbered> } | undefined;
}

/** A freshness frame sent with a market as a socket took it. */
export interface StaleNotice {
  readonly why?: string;
  readonly at: number;
}

/**
 * The events a subscriber socket goes through, as the hub tells them: each call is one line at
 * the place it happens (the socket route, the broadcaster, the sweep). What a socket was sent is
 * derived from these and the record: between taking a market and dropping it or falling behind,
 * a socket on its topic gets every image of the market (or, conflated, every image its variant
 * sent); nothing per frame is written.
 */
export interface SocketLedger {
  /** Opened, from this address. */
  opened(s: LedgerSocket, address: string): void;
  /** An event or sport filter set (with how it takes the markets) or removed. */
  filtered(s: LedgerSocket, kind: 'events' | 'sports', id: number, v: LedgerVariant | undefined): void;
  /** Took a market with a variant; `sent` the image it was sent then (none: it held that image already, or has none yet); `stale` the freshness it was told with it. */
  took(s: LedgerSocket, mid: string, v: LedgerVariant, sent: Numbered | undefined, stale: StaleNotice | undefined): void;
  /** About to drop these markets (those it takes). */
  dropping(s: LedgerSocket, mids: Iterable<string>): void;
  /** Fell behind: off its topics, holding what `s.lag` says. */
  fellBehind(s: LedgerSocket): void;
  /** Caught up: sent the newest image of each market that moved, and back on its topics. */
  caughtUp(s: LedgerSocket): void;
  /** A conflated variant sent a market's image to its topic. */
  conflated(v: LedgerVariant, mid: string, sent: Numbered): void;
  /** Closed with this code. */
  closed(s: LedgerSocket, code: number): void;
}

/** What a market's topic has handed its sockets for a variant (the broadcaster): none while a newer image waits. */
export interface Handed {
  handed(mid: string, v: LedgerVariant): Numbered | undefined;
}

/** [mid, epoch, seq], epoch and seq null when what the socket holds is not known here (its conflation held a newer image back). */
type SeqAt = [string, string | null, number | null];

/**
 * The ledger as the record keeps it: one note per event, through the pod's taps, in the order
 * the socket went through them. A socket is named `<pod>.<id>` across the cluster.
 */
export class RecordedLedger implements SocketLedger {
  private handedBy: Handed | undefined;

  constructor(private readonly taps: Pick<RecordTaps, 'note' | 'pod'>, private readonly book: { get(mid: string): Numbered | undefined }) {}

  /** The broadcaster registers once it exists: it is built with this ledger. */
  watch(h: Handed): void {
    this.handedBy = h;
  }

  conn(s: LedgerSocket): string {
    return `${this.taps.pod}.${s.id}`;
  }

  opened(s: LedgerSocket, address: string): void {
    this.note(s, 'open', { key: s.keyId, client: s.client, address, format: s.format, hb: s.hbMs });
  }

  filtered(s: LedgerSocket, kind: 'events' | 'sports', id: number, v: LedgerVariant | undefined): void {
    // A closing socket's filters go with it: its close says so.
    if (!s.closed) this.note(s, 'filter', { kind, id, ...(v ? how(v) : { removed: true }) });
  }

  took(s: LedgerSocket, mid: string, v: LedgerVariant, sent: Numbered | undefined, stale: StaleNotice | undefined): void {
    // Behind, it is sent the image when it catches up; not sent, it held the newest already (a resume).
    const holds = s.lag ? undefined : sent ?? this.book.get(mid);
    this.note(s, 'take', { mid, ...how(v), epoch: holds?.epoch ?? null, seq: holds?.seq ?? null, sent: sent !== undefined, behind: s.lag !== undefined, ...(stale ? { stale } : {}) });
  }

  dropping(s: LedgerSocket, mids: Iterable<string>): void {
    const seqs: SeqAt[] = [];
    for (const mid of mids) if (s.markets.has(mid)) seqs.push(this.holds(s, mid));
    if (seqs.length) this.note(s, 'drop', { seqs });
  }

  fellBehind(s: LedgerSocket): void {
    this.note(s, 'behind', { seqs: [...s.markets.keys()].map((mid) => this.holds(s, mid)) });
  }

  caughtUp(s: LedgerSocket): void {
    const seqs: SeqAt[] = [];
    for (const mid of s.markets.keys()) {
      const e = this.book.get(mid);
      seqs.push([mid, e?.epoch ?? null, e?.seq ?? null]);
    }
    this.note(s, 'caught', { seqs });
  }

  conflated(v: LedgerVariant, mid: string, sent: Numbered): void {
    this.taps.note('sent', { variant: v.key, mid, epoch: sent.epoch, seq: sent.seq });
  }

  closed(s: LedgerSocket, code: number): void {
    this.note(s, 'close', { code, seqs: [...s.markets.keys()].map((mid) => this.holds(s, mid)) });
  }

  /** What the socket holds of a market now: what it had when it fell behind, or what its topic handed it. */
  private holds(s: LedgerSocket, mid: string): SeqAt {
    const e = s.lag ? s.lag.seqs.get(mid) : this.handedBy?.handed(mid, s.markets.get(mid)!);
    return [mid, e?.epoch ?? null, e?.seq ?? null];
  }

  private note(s: LedgerSocket, op: string, body: Record<string, unknown>): void {
    this.taps.note('ledger', { conn: this.conn(s), op, ...body });
  }
}

const how = (v: LedgerVariant) => ({ variant: v.key, depth: v.depth, conflate: v.conflate, delta: v.delta });
