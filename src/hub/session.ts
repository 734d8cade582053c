import type { Format, Frame } from '../odds/book.js';

/**
 * What the hub needs of a socket. uWS's WebSocket satisfies it as it is; a
 * test can hand in anything else that does.
 */
export interface Conn {
  send(frame: Frame, isBinary?: boolean, compress?: boolean): number;
  subscribe(topic: string): boolean;
  unsubscribe(topic: string): boolean;
  getBufferedAmount(): number;
  cork(fn: () => void): unknown;
  end(code?: number, reason?: string): void;
}

/** What the broadcaster needs of uWS's pub/sub: one call to publish, one to count. */
export interface Topics {
  publish(topic: string, frame: Frame, isBinary: boolean, compress?: boolean): boolean;
  numSubscribers(topic: string): number;
}

/**
 * The conflation intervals the server runs, in ms. A client may ask any interval the protocol
 * accepts; it gets the smallest preset at or above it, so it never gets more than one frame per
 * interval it asked, and however many intervals clients ask, each market is encoded for at most
 * these few (docs/protocol.md#conflation).
 */
export const CONFLATE_PRESETS: readonly number[] = [100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000];

/** The preset a requested interval runs at: 0 stays 0 (every update). */
export function conflatePreset(ms: number): number {
  if (ms <= 0) return 0;
  return CONFLATE_PRESETS.find((p) => p >= ms) ?? CONFLATE_PRESETS[CONFLATE_PRESETS.length - 1];
}

/**
 * How a socket takes a market: in its format, cut to `depth` ladder levels (0
 * all), at most one frame per `conflate` ms (0 every update; snapped to a
 * preset), as images or, with `delta`, as what changed since the frame before.
 * Sockets that asked the same share one key, the prefix of their topics.
 */
export interface Variant {
  readonly key: string;
  readonly format: Format;
  readonly depth: number;
  readonly conflate: number;
  readonly delta: boolean;
}

export function variant(format: Format, depth = 0, conflate = 0, delta = false): Variant {
  const every = conflatePreset(conflate);
  return { key: `${format === 'json' ? 'j' : 'p'}${depth}.${every}${delta ? 'd' : ''}`, format, depth, conflate: every, delta };
}

/** One uWS topic per (variant, market): every socket on it gets the same bytes. */
export const topicOf = (v: Variant, mid: string): string => `${v.key}/${mid}`;

/** '$' cannot occur in a market ID, so the feed topic never collides with a market's. */
export const FEED_TOPIC: Readonly<Record<Format, string>> = { json: 'j$feed', proto: 'p$feed' };

/** Where a slow socket stood when it fell behind, so catching up sends exactly what changed. */
export interface Lag {
  readonly since: number;
  /** Each market's (epoch, seq) when it fell behind: what it had already been sent. */
  readonly seqs: ReadonlyMap<string, { epoch: string; seq: number }>;
  /** The state store's revision then: `market` and `result` frames newer than it are owed. */
  readonly stateRev: number;
  /** Markets it lost meanwhile; told in one `unsubscribed` once it has caught up. */
  readonly lost: ReadonlySet<string>;
}

/** Filters that also take markets created later: on an event or on a sport. */
export type FilterKind = 'events' | 'sports';

/**
 * A subscriber socket and the one owner of its state: what it takes, its
 * filters, whether it is behind, when it was last sent a frame, and so which
 * uWS topics it is on. It is on `topicOf(v, mid)` for each market it takes,
 * exactly while it is not behind and not closing; every change goes through
 * `sync`, so the topics never drift from what it holds. The hub indexes
 * sessions, the broadcaster sends through them, the sweep decides when one
 * falls behind or catches up; none of them writes a session's fields.
 */
export class Session {
  private readonly subs = new Map<string, Variant>();
  private readonly filters: Record<FilterKind, Map<number, Variant>> = { events: new Map(), sports: new Map() };
  private behind: (Lag & { lost: Set<string> }) | undefined;
  private lastSend = Date.now();
  /** Set when the server closes it: off its topics, so no frame follows its close frame. */
  private ending = false;
  private ended = false;

  constructor(
    readonly id: number,
    readonly keyId: string,
    readonly client: string,
    readonly format: Format,
    readonly hbMs: number,
    private readonly conn: Conn,
  ) {}

  get binary(): boolean {
    return this.format === 'proto';
  }

  get closed(): boolean {
    return this.ended;
  }

  /** Where it stood when it fell behind; undefined while it is on its topics. */
  get lag(): Lag | undefined {
    return this.behind;
  }

  /** Last frame sent to it directly; frames from topics are known by their markets' publish times. */
  get lastSendAt(): number {
    return this.lastSend;
  }

  /** Each market it takes and how. */
  get markets(): ReadonlyMap<string, Variant> {
    return this.subs;
  }

  /** Its event or sport filters: ID to how. */
  filtersOf(kind: FilterKind): ReadonlyMap<number, Variant> {
    return this.filters[kind];
  }

  /** Bytes uWS holds for it, not yet written to the network. */
  buffered(): number {
    return this.conn.getBufferedAmount();
  }

  /** Takes a market (or takes it another way); false when it already took it the same way. */
  take(mid: string, v: Variant): boolean {
    const was = this.subs.get(mid);
    if (was?.key === v.key) return false;
    const topic = this.topic(mid);
    this.subs.set(mid, v);
    // Taken again while behind: no longer owed as lost.
    this.behind?.lost.delete(mid);
    this.sync(mid, topic);
    return true;
  }

  /** Drops a market; false when it did not take it. */
  drop(mid: string): boolean {
    if (!this.subs.has(mid)) return false;
    const topic = this.topic(mid);
    this.subs.delete(mid);
    this.sync(mid, topic);
    return true;
  }

  /** A market dropped on the server's initiative while behind: told in one `unsubscribed` once caught up. */
  lostWhileBehind(mid: string): void {
    this.behind?.lost.add(mid);
  }

  setFilter(kind: FilterKind, id: number, v: Variant | undefined): void {
    if (v) this.filters[kind].set(id, v);
    else this.filters[kind].delete(id);
  }

  /**
   * Off its topics, noting what it had been sent (`handed`: the (epoch, seq) its topic for each
   * market and variant has been handed, none while that is not the newest): uWS never drops frames
   * itself (its limit is off), so everything up to here was queued for it.
   */
  fallBehind(now: number, handed: (mid: string, v: Variant) => { epoch: string; seq: number } | undefined, stateRev: number): void {
    if (this.behind || this.ended) return;
    const seqs = new Map<string, { epoch: string; seq: number }>();
    for (const [mid, v] of this.subs) {
      const e = handed(mid, v);
      if (e) seqs.set(mid, { epoch: e.epoch, seq: e.seq });
    }
    this.resync(() => (this.behind = { since: now, seqs, stateRev, lost: new Set() }));
  }

  /** Back on its topics; returns where it stood, so the caller sends what changed meanwhile (nothing when it was not behind). */
  catchUp(): Lag | undefined {
    const lag = this.behind;
    if (lag) this.resync(() => (this.behind = undefined));
    return lag;
  }

  /** On the feed topic of its format, for as long as it is open. */
  joinFeed(): void {
    this.conn.subscribe(FEED_TOPIC[this.format]);
  }

  send(frame: Frame, compress: boolean): void {
    if (this.ended) return;
    this.conn.send(frame, this.binary, compress);
    this.lastSend = Date.now();
  }

  /** Frames sent inside go out in one write. */
  cork(fn: () => void): void {
    if (this.ended) fn();
    else this.conn.cork(fn);
  }

  end(code: number, reason: string): void {
    if (this.ended || this.ending) return;
    this.resync(() => (this.ending = true));
    this.conn.end(code, reason);
  }

  /** uWS closed it: from now on nothing is sent and no topic changes (uWS throws on a closed socket). */
  close(): void {
    this.ended = true;
  }

  /** The topic it should be on for a market, derived from what it takes and whether it is behind. */
  private topic(mid: string): string | undefined {
    const v = this.subs.get(mid);
    return v && !this.behind && !this.ending ? topicOf(v, mid) : undefined;
  }

  /** The one place its uWS topics change: from the topic it was on for `mid` to the one it should be on now. */
  private sync(mid: string, was: string | undefined): void {
    const now = this.topic(mid);
    if (was === now || this.ended) return;
    if (was) this.conn.unsubscribe(was);
    if (now) this.conn.subscribe(now);
  }

  /** A change to whether it is behind: every market's topic follows. */
  private resync(change: () => void): void {
    const was = [...this.subs.keys()].map((mid) => [mid, this.topic(mid)] as const);
    change();
    for (const [mid, topic] of was) this.sync(mid, topic);
  }
}
