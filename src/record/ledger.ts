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

/** What an event or sport filter narrows its markets to (the hub's Narrowing is one): each list given must hold a market's value. */
export interface LedgerNarrowing {
  readonly types?: Iterable<string>;
  readonly countries?: Iterable<string>;
  readonly bettingTypes?: Iterable<string>;
  readonly turnInPlay?: boolean;
}

/** A subscriber socket as the ledger sees it (the hub's Subscriber is one). */
export interface LedgerSocket {
  readonly id: number;
  readonly keyId: string;
  readonly client: string;
  readonly format: string;
  readonly hbMs: number;
}

/** A market and the image a socket holds of it; none where that is not known here (a newer image was held back from its topic) or it holds none. */
export type Holding = readonly [mid: string, holds: Numbered | undefined];

/** A market joining its topic: the image it holds then, and whether it was sent it now (else it held it already). */
export type Joining = readonly [mid: string, holds: Numbered | undefined, sent: boolean];

/**
 * The events a subscriber socket goes through, as the socket tells them: each call is one line
 * where it happens (its subscriber, the broadcaster's conflated publish, the socket route's
 * open). Each market a socket takes is, at any time, on its topic or owed its newest image; what
 * it was sent is derived from these and the record: while on a market's topic, a socket gets
 * every image of the market (or, conflated, every image its variant sent); while owed, nothing
 * but what rejoining sends it. Nothing per frame is written.
 */
export interface SocketLedger {
  /** Opened, from this address. */
  opened(s: LedgerSocket, address: string): void;
  /** An event or sport filter set (with how it takes the markets, and what it narrows them to) or removed. */
  filtered(s: LedgerSocket, kind: 'events' | 'sports', id: number, v: LedgerVariant | undefined, narrowing?: LedgerNarrowing): void;
  /** Took markets as `v` (or took them again another way): each owed its image from now, holding what it says (a resume, or what its topic had handed it). */
  took(s: LedgerSocket, v: LedgerVariant, markets: readonly Holding[]): void;
  /** Fell behind: these markets left their topics, owed from now, each holding what its topic had handed it. */
  owed(s: LedgerSocket, markets: readonly Holding[]): void;
  /** In one round, these owed markets were sent their newest image (or held it already) and joined their topics again. */
  joined(s: LedgerSocket, markets: readonly Joining[]): void;
  /** Told these owed markets are `behind`, each with the time it has been owed since (the notice's `at`). */
  behind(s: LedgerSocket, markets: readonly (readonly [mid: string, since: number])[]): void;
  /**
   * Kept up again after `behind`: told these markets are `live`, and not these others (`stale`),
   * which the server holds stale and whose stale frame it was sent since.
   */
  live(s: LedgerSocket, mids: readonly string[], stale: readonly string[]): void;
  /** Dropped these markets, holding what each says. */
  dropped(s: LedgerSocket, markets: readonly Holding[]): void;
  /** A conflated variant sent a market's image to its topic. */
  conflated(v: LedgerVariant, mid: string, sent: Numbered): void;
  /** Closed with this code, holding what each market says. */
  closed(s: LedgerSocket, code: number, markets: readonly Holding[]): void;
}

/** No record (RECORD=off): every event is let go. */
export const UNRECORDED: SocketLedger = {
  opened() {},
  filtered() {},
  took() {},
  owed() {},
  joined() {},
  behind() {},
  live() {},
  dropped() {},
  conflated() {},
  closed() {},
};

/** [mid, epoch, seq] as a note holds what a socket holds of a market; epoch and seq null where none is known. */
export type SeqAt = [string, string | null, number | null];
/** A `join` note's [mid, epoch, seq, sent]: `sent` false when it held that image already. */
export type JoinAt = [string, string | null, number | null, boolean];

const seqs = (markets: readonly Holding[]): SeqAt[] => markets.map(([mid, e]) => [mid, e?.epoch ?? null, e?.seq ?? null]);
const how = (v: LedgerVariant) => ({ variant: v.key, depth: v.depth, conflate: v.conflate, delta: v.delta });
const narrowed = (n: LedgerNarrowing) => ({
  ...(n.types ? { types: [...n.types] } : {}),
  ...(n.countries ? { countries: [...n.countries] } : {}),
  ...(n.bettingTypes ? { bettingTypes: [...n.bettingTypes] } : {}),
  ...(n.turnInPlay !== undefined ? { turnInPlay: n.turnInPlay } : {}),
});

/**
 * The ledger as the record keeps it: one note per event, through the pod's taps, in the order
 * the socket went through them (a round or a fall behind is one note, however many markets it
 * moves). A socket is named `<pod>.<id>` across the cluster. The events and how they are read
 * back are docs/record.md's; `spans.ts` replays them.
 */
export class RecordedLedger implements SocketLedger {
  constructor(private readonly taps: Pick<RecordTaps, 'note' | 'pod'>) {}

  conn(s: LedgerSocket): string {
    return `${this.taps.pod}.${s.id}`;
  }

  opened(s: LedgerSocket, address: string): void {
    this.note(s, 'open', { key: s.keyId, client: s.client, address, format: s.format, hb: s.hbMs });
  }

  filtered(s: LedgerSocket, kind: 'events' | 'sports', id: number, v: LedgerVariant | undefined, narrowing?: LedgerNarrowing): void {
    this.note(s, 'filter', { kind, id, ...(v ? how(v) : { removed: true }), ...(v && narrowing ? { narrowing: narrowed(narrowing) } : {}) });
  }

  took(s: LedgerSocket, v: LedgerVariant, markets: readonly Holding[]): void {
    if (markets.length) this.note(s, 'take', { ...how(v), seqs: seqs(markets) });
  }

  owed(s: LedgerSocket, markets: readonly Holding[]): void {
    if (markets.length) this.note(s, 'owe', { seqs: seqs(markets) });
  }

  joined(s: LedgerSocket, markets: readonly Joining[]): void {
    if (markets.length) this.note(s, 'join', { seqs: markets.map(([mid, e, sent]): JoinAt => [mid, e?.epoch ?? null, e?.seq ?? null, sent]) });
  }

  behind(s: LedgerSocket, markets: readonly (readonly [string, number])[]): void {
    if (markets.length) this.note(s, 'behind', { mids: markets });
  }

  live(s: LedgerSocket, mids: readonly string[], stale: readonly string[]): void {
    if (mids.length || stale.length) this.note(s, 'live', { mids, stale });
  }

  dropped(s: LedgerSocket, markets: readonly Holding[]): void {
    if (markets.length) this.note(s, 'drop', { seqs: seqs(markets) });
  }

  conflated(v: LedgerVariant, mid: string, sent: Numbered): void {
    this.taps.note('sent', { variant: v.key, mid, epoch: sent.epoch, seq: sent.seq });
  }

  closed(s: LedgerSocket, code: number, markets: readonly Holding[]): void {
    this.note(s, 'close', { code, seqs: seqs(markets) });
  }

  private note(s: LedgerSocket, op: string, body: Record<string, unknown>): void {
    this.taps.note('ledger', { conn: this.conn(s), op, ...body });
  }
}
