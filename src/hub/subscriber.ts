import type { RecognizedString } from 'uWebSockets.js';
import { encodeFor } from '../odds/codec.js';
import type { Book, BookEntry, Format, Frame } from '../odds/book.js';
import type { FeedStatus, FreshnessMessage, ServerMessage, Since } from '../odds/messages.js';
import type { Logger } from '../log.js';
import type { OddsMetrics } from '../metrics/odds.js';
import type { Clock } from '../lib/clock.js';
import type { TokenBucket } from '../lib/token-bucket.js';
import type { Holding, Joining, SocketLedger } from '../record/ledger.js';
import type { Carried, FilterKind, MarketIndex, IndexedVariant } from './market-index.js';
import type { Narrowing } from './narrowing.js';
import type { MarketStates } from './states.js';
import { FEED_TOPIC, topicOf, wireBytes, type Variant } from './variant.js';

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
  /** A WebSocket ping: every client answers it with a pong carrying the same bytes, once it has read what came before. */
  ping(message?: RecognizedString): number;
}

/** What a subscriber needs of the publishing side (the broadcaster): it hands a subscriber nothing but what its topics carry. */
export interface Publishing {
  /** Hands images queued this turn to their topics, so a frame sent directly after them is newer. */
  flush(): void;
  /** The image the topic of `mid` for `v` has handed its sockets; none while a newer one waits to go out. */
  handed(mid: string, v: Variant): BookEntry | undefined;
  /** A socket joined a topic holding `entry`: a conflated delta topic's next frame must be one it can apply. */
  joined(mid: string, indexed: IndexedVariant, entry: BookEntry | undefined): void;
  /** The feed status a socket opening now is told, and what its format's feed topic carried. */
  readonly feed: FeedStatus;
  feedTopic(format: Format): Carried;
}

/** When the sweep looks at a subscriber: it asks for looks, and the sweep keeps the schedule. */
export interface Looks {
  /** It wants a look sooner than it said (it was sent something): it was due at `was`, now at its `nextLook`. */
  moved(s: Subscriber, was: number): void;
  /** Look at it after every publish while it is close to what its link can carry. */
  tight(s: Subscriber, on: boolean): void;
  /** It closed: out of the schedule at once. */
  forget(s: Subscriber): void;
}

export interface AgeLimits {
  /** The age a price may reach on a screen before the socket is told it is behind (WS_MAX_AGE_MS). */
  maxAgeMs: number;
  /** Bytes uWS may hold for it unsent before it falls behind (WS_SLOW_BYTES). */
  slowBytes: number;
  /** Bytes uWS may hold for it at all: past them it is closed (WS_MAX_BACKPRESSURE). */
  maxBytes: number;
  /** How long it may read nothing it was sent, or stay backed up, before it is closed (WS_SLOW_CLOSE_MS). */
  slowCloseMs: number;
}

/** What every subscriber shares: the service's parts it uses, wired once. */
export interface SubscriberDeps {
  index: MarketIndex<Subscriber>;
  publishing: Publishing;
  book: Pick<Book, 'get'>;
  states: Pick<MarketStates, 'since' | 'stale' | 'revision' | 'current'>;
  looks: Looks;
  limits: AgeLimits;
  metrics: OddsMetrics;
  log: Logger;
  clock: Clock;
  /** Frames are deflated for sockets that negotiated permessage-deflate (WS_COMPRESSION). */
  compress: boolean;
  /** Told, where each happens, what it takes, leaves, is sent, told and holds (the record; `UNRECORDED` with RECORD=off). */
  ledger: SocketLedger;
}

/** One market a subscriber takes: how, its topic's entry, and the topic's bytes when it joined it. */
interface Sub {
  readonly variant: Variant;
  readonly indexed: IndexedVariant;
  base: number;
}

/** What the client holds of a market: its numbering. */
type HeldPosition = { readonly epoch: string; readonly seq: number } | undefined;

/**
 * A market off its topic, owed its newest image: what the client holds of it (nothing, for a new
 * subscription), since when, and why. A new subscription owes the market's staleness before its
 * image and where it stands after it (`MarketStates.current`); one that fell behind owes every
 * `market`, `result` and `freshness` frame newer than `stateRev` instead, and its image goes as
 * `skipped` (`con` on the wire).
 */
interface Owed {
  held: HeldPosition;
  readonly since: number;
  readonly stateRev: number | undefined;
}

/** Probes outstanding at most: more would only say again that the client is not reading. */
const PROBES = 8;
/** What a socket may have on its way before anything is known of its link: a weak mobile link reads it within the bound. */
const INITIAL_WINDOW = 64 * 1024;
/** The least a socket may have on its way, whatever its link: one large image and then some. */
const MIN_WINDOW = 16 * 1024;
/** How long a socket refused for rate must go without a refusal to be taken as having backed off. */
const RATE_QUIET_MS = 1000;
const PROBE_BYTES = new Uint8Array(4);
const PROBE_VIEW = new DataView(PROBE_BYTES.buffer);
interface Probe {
  id: number;
  at: number;
  /** Bytes it had been sent when the probe went. */
  sent: number;
}

/**
 * How a socket reads, measured with WebSocket pings ("probes"): a client answers each with a pong
 * once it has read everything sent before it, so the answer says how many of the bytes it was
 * sent it has read, and when. From that: how fast it reads while it has something to read, and
 * how long the oldest unanswered probe has waited (what it holds is at least that old).
 */
class Link {
  private readonly probes: Probe[] = [];
  private last: Probe | undefined;
  private next = 1;
  /** Bytes it had read by its last answer. */
  read = 0;
  /** Where it stood at some of its answers, oldest first, the oldest at most a span before the next. */
  private readonly marks: { at: number; read: number }[];
  /** Bytes a ms it reads; undefined until measured. */
  rate: number | undefined;
  /** The shortest wait of any probe: the way there and back, which is no time spent reading. */
  private quickest = Infinity;

  /**
   * `initial`: the pace a socket is taken to read at before anything is known, in bytes a ms;
   * `span`: the shortest time a pace is measured over, so answers read in one go (a client
   * reading in bursts answers every probe it finds at once) never pass for a fast link.
   */
  constructor(now: number, private readonly initial: number, private readonly span: number) {
    this.marks = [{ at: now, read: 0 }];
  }

  /** A probe to send now, having sent `sent` bytes; undefined when enough are unanswered. */
  probe(now: number, sent: number): Uint8Array | undefined {
    if (this.probes.length >= PROBES) return undefined;
    const id = this.next++;
    this.last = { id, at: now, sent };
    this.probes.push(this.last);
    // uWS copies a ping's payload as it frames it: one scratch buffer serves every probe.
    PROBE_VIEW.setUint32(0, id, true);
    return PROBE_BYTES;
  }

  /** The last probe sent, answered or not. */
  get lastProbe(): { at: number; sent: number } | undefined {
    return this.last;
  }

  get outstanding(): number {
    return this.probes.length;
  }

  /**
   * A pong: its probe's answer, with how long the probe waited; undefined for one that answers
   * no probe outstanding. What it read since its last answer a span or more ago, over that time,
   * is a pace it kept. When the probe had been sent by then, a way there and back earlier,
   * everything it read meanwhile had reached it: it read as fast as it could, and that is its
   * pace now. Otherwise it may have waited for data part of the time (a long way, or a pause
   * of its own): its pace is at least that, never less.
   */
  answered(payload: ArrayBuffer, now: number): number | undefined {
    if (payload.byteLength !== 4) return undefined;
    const id = new DataView(payload).getUint32(0, true);
    const k = this.probes.findIndex((p) => p.id === id);
    if (k < 0) return undefined;
    const p = this.probes[k];
    this.probes.splice(0, k + 1);
    this.quickest = Math.min(this.quickest, now - p.at);
    while (this.marks.length > 1 && now - this.marks[1].at >= this.span) this.marks.shift();
    // The newest mark a span old, when one is: the older ones went.
    const mark = now - this.marks[0].at >= this.span ? this.marks[0] : undefined;
    if (mark && p.sent - mark.read >= 1024) {
      const pace = (p.sent - mark.read) / (now - mark.at);
      this.rate = p.at + this.quickest <= mark.at ? pace : Math.max(this.rate ?? this.initial, pace);
    }
    this.read = Math.max(this.read, p.sent);
    // Where it stands now, an eighth of a span after the mark before at least: ten marks at most.
    // Answers handled soon after it (together, when the server's loop was late) move the newest
    // mark's position on: a pace measured from it may come out an eighth low, never high.
    const newest = this.marks.at(-1)!;
    if (now - newest.at >= this.span / 8) this.marks.push({ at: now, read: this.read });
    else newest.read = this.read;
    return now - p.at;
  }

  /** How long the oldest unanswered probe has waited: what the client reads now is at least this old. */
  waiting(now: number): number {
    return this.probes.length ? now - this.probes[0].at : 0;
  }
}

/**
 * A subscriber socket, and the one owner of everything about it: what it takes and how, its
 * filters, how it reads (probed), what is on its way to it, which markets it is owed and since
 * when, which it was told are behind, its heartbeat, its message budget, and so which uWS topics
 * it is on. Others ask it, or tell it what happened; only its own methods change its state, and
 * its entries in the market index follow from them.
 *
 * The age of a price on its screen is bounded: it is on a market's topic only while what is on
 * its way to it can be read within half of `maxAgeMs` at the pace it reads (its window), and
 * otherwise is owed that market. It falls behind (every market owed) when the window is full, a
 * probe waits past half the bound, or uWS holds more than `slowBytes`; owed markets are then
 * sent in rounds, the newest image of each that moved, as much as its window takes, the next
 * round once the last was read; each joins its topic again as it is sent. A market owed past
 * a quarter of the bound with a newer image is told `behind`, and `live` again once the socket has kept
 * up for a quarter of the bound. It is closed (4008) when it reads nothing for `slowCloseMs`,
 * stays backed up that long, or uWS holds more than `maxBytes`.
 */
export class Subscriber {
  private readonly subs = new Map<string, Sub>();
  private readonly filters: Record<FilterKind, Map<number, Variant>> = { events: new Map(), sports: new Map() };
  /** Markets off their topics, in the order they are to be sent. */
  private readonly owed = new Map<string, Owed>();
  /** Markets told `behind`, with when: told `live` once the socket keeps up. */
  private readonly told = new Map<string, number>();
  /** Markets dropped while owed, on the server's initiative, and the state revision then: told in one `unsubscribed` once caught up. */
  private readonly lost = new Map<string, number>();
  private readonly link: Link;
  /** Bytes sent directly, and carried by topics it has left. */
  private settled = 0;
  private readonly feedBase: number;
  /** When it was last sent a frame (one from a topic noticed at the look after it), and all it had been sent then: a heartbeat follows `hbMs` of silence. */
  private heardAt: number;
  private seen = 0;
  /** When it last had nothing owed; undefined while it has. */
  private keptUpSince: number | undefined;
  /** Since when uWS has held more than a quarter of `slowBytes` for it. */
  private backedSince: number | undefined;
  /** Set when the server closes it: off its topics, so no frame follows its close frame. */
  private ending = false;
  private ended = false;
  /** Messages refused for rate since it last kept within its budget, and when the last was. */
  private strikes = 0;
  private refusedAt = 0;
  /** Set while its client's stored set loads, and true once a change of that set landed meanwhile. */
  private storedSetMoved: boolean | undefined;
  /** When it next wants the sweep to look at it. */
  private lookAt: number;

  constructor(
    readonly id: number,
    readonly keyId: string,
    readonly client: string,
    readonly format: Format,
    readonly hbMs: number,
    /** Its own message budget (http/budget.ts): what it may send the server. */
    readonly bucket: TokenBucket,
    private readonly conn: Conn,
    private readonly deps: SubscriberDeps,
  ) {
    const now = deps.clock.now();
    this.link = new Link(now, INITIAL_WINDOW / (deps.limits.maxAgeMs / 2), deps.limits.maxAgeMs / 8);
    this.heardAt = now;
    this.keptUpSince = now;
    this.lookAt = now + hbMs;
    this.feedBase = deps.publishing.feedTopic(format).bytes;
  }

  /** When it next wants the sweep to look at it: only it changes this, as it sees fit. */
  get nextLook(): number {
    return this.lookAt;
  }

  get binary(): boolean {
    return this.format === 'proto';
  }

  get closed(): boolean {
    return this.ended;
  }

  /** Each market it takes and how. */
  *markets(): Iterable<[string, Variant]> {
    for (const [mid, s] of this.subs) yield [mid, s.variant];
  }

  /** Whether it is subscribed to the market, however it was added. */
  has(mid: string): boolean {
    return this.subs.has(mid);
  }

  /**
   * A topic of one of its markets carried frames: what it carried since counted as sent to it. So
   * what it was sent is a sum kept as it goes, not one over all its markets at every look.
   */
  carried(mid: string): void {
    const s = this.subs.get(mid);
    if (!s || this.owed.has(mid)) return;
    this.settled += s.indexed.topic.bytes - s.base;
    s.base = s.indexed.topic.bytes;
  }

  get size(): number {
    return this.subs.size;
  }

  /** Whether any market is off its topic, owed its image. */
  get behind(): boolean {
    return this.owed.size > 0;
  }

  /** Markets it is owed whose newest image it does not hold: frames of them are being skipped for it. */
  get missing(): number {
    let n = 0;
    for (const [mid, o] of this.owed) {
      const e = this.deps.book.get(mid);
      if (e && (o.held?.epoch !== e.epoch || o.held.seq !== e.seq)) n++;
    }
    return n;
  }

  /** Bytes uWS holds for it, not yet written to the network. */
  buffered(): number {
    return this.ended ? 0 : this.conn.getBufferedAmount();
  }

  /** Its event or sport filters: ID to how. */
  filtersOf(kind: FilterKind): ReadonlyMap<number, Variant> {
    return this.filters[kind];
  }

  /** On the feed topic of its format, told the feed status unless it is OK. */
  open(): void {
    this.conn.subscribe(FEED_TOPIC[this.format]);
    const { feed } = this.deps.publishing;
    if (feed !== 'OK') this.send({ op: 'feed', status: feed });
  }

  /**
   * Takes markets as `v` (a market taken another way moves to it), each owed its image unless
   * `since` shows the client holds the newest, and sends what its window takes now: each market's
   * image, after its `freshness` frame when it is stale and followed by its `market` and `result`
   * frames when they say anything an open market would not, and it joins the market's topic.
   * Asked again for a market it takes, it is sent the image again (unless `since` holds it).
   */
  subscribe(mids: Iterable<string>, v: Variant, since?: Since): void {
    if (this.ended) return;
    const now = this.deps.clock.now();
    const took: Holding[] = [];
    for (const mid of mids) {
      const was = this.subs.get(mid);
      const seq = since?.seqs[mid];
      took.push([mid, was ? this.holds(mid, was) : seq === undefined ? undefined : { epoch: since!.epoch, seq }]);
      if (was && !this.owed.has(mid)) this.leave(mid, was);
      if (was?.variant.key !== v.key) {
        if (was) this.deps.index.drop(this, mid, was.variant);
        this.subs.set(mid, { variant: v, indexed: this.deps.index.add(this, mid, v), base: 0 });
      }
      this.lost.delete(mid);
      // Owed afresh, last: what it asked for now goes after what it was owed before; state frames it missed behind are still owed.
      const before = this.owed.get(mid);
      this.owed.delete(mid);
      this.owed.set(mid, { held: seq === undefined ? undefined : { epoch: since!.epoch, seq }, since: before?.since ?? now, stateRev: before?.stateRev });
    }
    this.deps.ledger.took(this, v, took);
    this.keptUpSince = undefined;
    this.deliver(now);
  }

  /** Drops markets; returns those it took. */
  unsubscribe(mids: Iterable<string>): string[] {
    const had: string[] = [];
    if (this.ended) return had;
    const dropped: Holding[] = [];
    for (const mid of mids) {
      const held = this.drop(mid);
      if (!held) continue;
      had.push(mid);
      dropped.push(held);
    }
    this.deps.ledger.dropped(this, dropped);
    this.caughtUp(this.deps.clock.now());
    return had;
  }

  /**
   * Drops markets on the server's initiative and says so: at once for those on their topics
   * (which carried their final frames), after their final state for those it is owed.
   */
  lose(mids: Iterable<string>): void {
    if (this.ended) return;
    const told: string[] = [];
    const dropped: Holding[] = [];
    for (const mid of mids) {
      const owed = this.owed.get(mid);
      const held = this.drop(mid);
      if (!held) continue;
      dropped.push(held);
      if (owed?.stateRev !== undefined) this.lost.set(mid, owed.stateRev);
      else told.push(mid);
    }
    this.deps.ledger.dropped(this, dropped);
    if (told.length) this.send({ op: 'unsubscribed', mids: told });
    this.caughtUp(this.deps.clock.now());
  }

  setFilter(kind: FilterKind, id: number, v: Variant | undefined, narrowing?: Narrowing): void {
    if (v) this.filters[kind].set(id, v);
    else this.filters[kind].delete(id);
    this.deps.index.filter(this, kind, id, v, narrowing);
    this.deps.ledger.filtered(this, kind, id, v, narrowing);
  }

  send(msg: ServerMessage): void {
    this.sendFrame(encodeFor(this.format, msg));
  }

  sendFrame(frame: Frame): void {
    if (this.ended) return;
    this.conn.send(frame, this.binary, this.deps.compress);
    this.settled += wireBytes(frame);
    this.heardAt = this.deps.clock.now();
    this.deps.metrics.delivered[this.format]++;
    this.soon();
  }

  /** Frames sent inside go out in one write. */
  cork(fn: () => void): void {
    if (this.ended) fn();
    else this.conn.cork(fn);
  }

  /**
   * A pong: what it has read. Owed markets go out at once when it read what was on its way.
   * False when it answers no probe outstanding (a client's own, or a forged one): such pongs are
   * the socket's messages to pay for (http/ws.ts).
   */
  pong(payload: ArrayBuffer): boolean {
    const now = this.deps.clock.now();
    const waited = this.link.answered(payload, now);
    if (waited === undefined || this.ended) return false;
    this.deps.metrics.readDelay.observe(waited / 1000);
    if (this.owed.size) this.deliver(now);
    return true;
  }

  /** uWS wrote out what it held: owed markets may go. */
  drained(): void {
    if (this.owed.size && !this.ended) this.deliver(this.deps.clock.now());
  }

  /**
   * The sweep's look: closed past its limits; else behind when what is on its way cannot be read
   * within half the bound, owed markets told `behind` past a quarter of the bound and sent when
   * there is room, told markets `live` once it keeps up; probed and sent its heartbeat. Returns
   * when it wants its next look.
   */
  check(now: number): number {
    if (this.ended) return Infinity;
    // Being looked at now: what it is sent meanwhile asks for no other look.
    this.lookAt = now;
    const buffered = this.conn.getBufferedAmount();
    if (this.overLimits(now, buffered)) return Infinity;
    let sent = this.sent();
    // Sent something since the last look: heard from now, to within a pass.
    if (sent !== this.seen) this.heardAt = now;
    if (this.joined() && this.late(now, buffered, sent)) this.fallBehind(now);
    if (this.owed.size) {
      this.tellBehind(now);
      this.deliver(now);
    } else this.settle(now);
    if (now - this.heardAt >= this.hbMs) this.send({ op: 'hb', ts: now });
    sent = this.seen = this.sent();
    const tight = this.tight(sent);
    this.probe(now, sent, this.deps.limits.maxAgeMs / (tight ? 8 : 4));
    this.deps.looks.tight(this, tight);
    const busy = this.owed.size || this.told.size || this.link.outstanding || buffered > 0;
    this.lookAt = busy ? now : this.heardAt + this.hbMs;
    return this.lookAt;
  }

  /** After a publish, while it is tight: behind at once when its window is full, before more is queued for it. */
  published(): void {
    if (this.ended || !this.joined()) return;
    const now = this.deps.clock.now();
    if (this.late(now, this.conn.getBufferedAmount(), this.sent())) this.fallBehind(now);
  }

  /** Closes it on the server's initiative, off its topics first, so nothing follows the close frame. */
  end(code: number, reason: string): void {
    if (this.ended || this.ending) return;
    this.ending = true;
    for (const [mid, s] of this.subs) if (!this.owed.has(mid)) this.leave(mid, s);
    this.conn.unsubscribe(FEED_TOPIC[this.format]);
    this.conn.end(code, reason);
  }

  /** uWS closed it, with `code`: out of the index, and nothing is sent or changed from now on (uWS throws on a closed socket). */
  close(code: number): void {
    if (this.ended) return;
    this.deps.ledger.closed(this, code, [...this.subs].map(([mid, s]) => [mid, this.holds(mid, s)]));
    this.ended = true;
    for (const [mid, s] of this.subs) this.deps.index.drop(this, mid, s.variant);
    for (const kind of ['events', 'sports'] as const) for (const id of this.filters[kind].keys()) this.deps.index.filter(this, kind, id, undefined);
    this.subs.clear();
    this.owed.clear();
    this.deps.looks.forget(this);
  }

  /** Its client's stored set is being read for it (stored-sets/), again from now on when it is read again. */
  loadingStoredSet(loading: boolean): void {
    this.storedSetMoved = loading ? false : undefined;
  }

  /** A change of its client's stored set landed: a load still running may be older than that change's ack. */
  storedSetChanged(): void {
    if (this.storedSetMoved === false) this.storedSetMoved = true;
  }

  /** Whether the stored set changed since its load began: the load must be read again. */
  get storedSetMovedSinceLoad(): boolean {
    return this.storedSetMoved === true;
  }

  /** Messages refused for rate since it last kept within its budget, this one included. */
  refusedForRate(): number {
    this.refusedAt = this.deps.clock.now();
    return ++this.strikes;
  }

  /**
   * A message read: it kept within its budget once it went `RATE_QUIET_MS` without a refusal. One
   * message let through now and then is no backing off: a flood earns one each time its budget
   * refills a token, and would otherwise never be closed.
   */
  readForRate(): void {
    if (this.strikes && this.deps.clock.now() - this.refusedAt >= RATE_QUIET_MS) this.strikes = 0;
  }

  /** A look on the sweep's next pass. */
  private soon(): void {
    const now = this.deps.clock.now();
    if (this.ended || this.lookAt <= now) return;
    const was = this.lookAt;
    this.lookAt = now;
    this.deps.looks.moved(this, was);
  }

  /** Bytes sent to it: directly, and by its topics as far as they were counted (`carried`), its format's feed topic too. */
  private sent(): number {
    return this.settled + this.deps.publishing.feedTopic(this.format).bytes - this.feedBase;
  }

  /** What may be on its way to it: what its link reads in half the bound. */
  private window(): number {
    const rate = this.link.rate;
    return rate === undefined ? INITIAL_WINDOW : Math.max(MIN_WINDOW, (rate * this.deps.limits.maxAgeMs) / 2);
  }

  /** What is on its way (of the `sent` bytes) could not be read within half the bound. */
  private late(now: number, buffered: number, sent: number): boolean {
    return buffered > this.deps.limits.slowBytes || sent - this.link.read > this.window() || this.link.waiting(now) > this.deps.limits.maxAgeMs / 2;
  }

  /** On some topic, and close to its window or not measured yet: looked at after every publish. */
  private tight(sent: number): boolean {
    return this.joined() && (this.link.rate === undefined || sent - this.link.read > this.window() / 4);
  }

  /** Whether it is on any market's topic. */
  private joined(): boolean {
    return this.subs.size > this.owed.size;
  }

  private overLimits(now: number, buffered: number): boolean {
    const { maxBytes, slowBytes, slowCloseMs } = this.deps.limits;
    if (buffered <= slowBytes / 4) this.backedSince = undefined;
    else this.backedSince ??= now;
    const backedMs = this.backedSince === undefined ? 0 : now - this.backedSince;
    const unread = this.link.waiting(now);
    if (buffered <= maxBytes && backedMs <= slowCloseMs && unread <= slowCloseMs) return false;
    this.deps.log.warn('closing slow consumer', { socket: this.id, client: this.client, buffered, backedMs, unreadMs: unread });
    this.deps.metrics.slowCloses.inc();
    this.end(4008, 'slow consumer');
    return true;
  }

  /**
   * Off every topic, owed every market: what its topics had handed it is what it holds (uWS
   * never drops frames itself: its limit is off), none while a newer image still waits to go out.
   */
  private fallBehind(now: number): void {
    const rev = this.deps.states.revision;
    const owed: Holding[] = [];
    for (const [mid, s] of this.subs) {
      if (this.owed.has(mid)) continue;
      const e = this.deps.publishing.handed(mid, s.variant);
      this.leave(mid, s);
      this.owed.set(mid, { held: e && { epoch: e.epoch, seq: e.seq }, since: now, stateRev: rev });
      owed.push([mid, e]);
    }
    this.deps.ledger.owed(this, owed);
    this.keptUpSince = undefined;
    this.deps.metrics.fellBehind.inc();
    // Probed now: the owed markets go as soon as the client has read what is on its way.
    this.probe(now, this.sent(), 0);
    this.soon();
    this.deps.looks.tight(this, false);
  }

  /**
   * As many owed markets as its window has room for, each once, in order: the newest image of
   * each that moved (after its `freshness` when stale; marked skipped when it fell behind), the
   * `market` and `result` frames that changed (where it stands, for one taken afresh), then back
   * on its topic. With nothing owed left, the markets it lost meanwhile, in one `unsubscribed`.
   * Then a probe, so the next round goes once this one is read.
   */
  private deliver(now: number): void {
    if (this.ended || this.ending) return;
    // Outside the sweep's pass (a pong, a drain), its topics' newest frames are not counted yet.
    for (const mid of this.subs.keys()) this.carried(mid);
    let room = this.window() - (this.sent() - this.link.read);
    const { slowBytes, maxAgeMs } = this.deps.limits;
    if (room <= 0 || this.conn.getBufferedAmount() > slowBytes || this.link.waiting(now) > maxAgeMs / 2) return;
    this.deps.publishing.flush();
    let resync = false;
    const joined: Joining[] = [];
    this.cork(() => {
      for (const [mid, o] of this.owed) {
        if (room <= 0) break;
        const before = this.settled;
        resync ||= o.stateRev !== undefined;
        joined.push(this.deliverOne(mid, o));
        room -= this.settled - before;
      }
      this.deps.ledger.joined(this, joined);
      this.caughtUp(now);
    });
    if (resync) this.deps.metrics.resyncs.inc();
    const sent = this.sent();
    this.probe(now, sent, 0);
    this.deps.looks.tight(this, this.tight(sent));
  }

  /** Sends an owed market what it is owed and has it join its topic; says which image it holds then, and whether it was sent it now. */
  private deliverOne(mid: string, o: Owed): Joining {
    const s = this.subs.get(mid)!;
    const { book, states, metrics } = this.deps;
    const e = book.get(mid);
    const since = o.stateRev === undefined ? [] : states.since(mid, o.stateRev);
    const stale = states.stale(mid);
    // Told it is stale before its image; told it is live (when that changed) after it.
    if (stale && (o.stateRev === undefined || since.includes(stale) || this.told.has(mid))) this.send(stale);
    const sent = e !== undefined && (o.held?.epoch !== e.epoch || o.held.seq !== e.seq);
    if (sent) {
      if (o.held && o.stateRev !== undefined) metrics.framesSkipped.inc(o.held.epoch === e.epoch ? e.seq - o.held.seq : 1);
      this.sendFrame(e.frame(this.format, o.stateRev === undefined ? 'none' : 'skipped', s.variant.depth));
    }
    // A market taken afresh is told where it stands after its image (its state and terms, its
    // settlement), so a late subscriber never takes it for open; one behind is sent what changed.
    const standing = o.stateRev === undefined ? states.current(mid) : since.filter((m) => m.op !== 'freshness');
    for (const msg of standing) this.send(msg);
    const live = since.find((m): m is FreshnessMessage => m.op === 'freshness' && m.live);
    if (live && !this.told.has(mid)) this.send(live);
    this.owed.delete(mid);
    this.join(mid, s, e);
    return [mid, e, sent];
  }

  /** Nothing owed any more: the markets lost meanwhile, after their final state, in one `unsubscribed`. */
  private caughtUp(now: number): void {
    if (this.owed.size) return;
    this.keptUpSince ??= now;
    if (!this.lost.size) return;
    for (const [mid, rev] of this.lost) for (const msg of this.deps.states.since(mid, rev)) this.send(msg);
    this.send({ op: 'unsubscribed', mids: [...this.lost.keys()] });
    this.lost.clear();
  }

  /**
   * Owed markets with a newer image than the client holds, owed for a quarter of the bound: told
   * `behind`, once. What is on its way is read within half the bound, so the word reaches the
   * screen within the bound of the market moving on.
   */
  private tellBehind(now: number): void {
    const quarter = this.deps.limits.maxAgeMs / 4;
    const told: [string, number][] = [];
    for (const [mid, o] of this.owed) {
      if (o.stateRev === undefined && !o.held) continue;
      if (now - o.since < quarter || this.told.has(mid)) continue;
      const e = this.deps.book.get(mid);
      if (!e || (o.held?.epoch === e.epoch && o.held.seq === e.seq)) continue;
      this.told.set(mid, o.since);
      this.deps.metrics.behindNotices.inc();
      this.send({ op: 'freshness', mid, live: false, why: 'behind', at: o.since });
      told.push([mid, o.since]);
    }
    this.deps.ledger.behind(this, told);
  }

  /** Kept up for a quarter of the bound: the markets told `behind` are live again, unless the server says they are stale. */
  private settle(now: number): void {
    if (!this.told.size || this.keptUpSince === undefined || now - this.keptUpSince < this.deps.limits.maxAgeMs / 4) return;
    const live: string[] = [];
    const stale: string[] = [];
    for (const mid of this.told.keys()) {
      if (!this.subs.has(mid)) continue;
      if (this.deps.states.stale(mid)) stale.push(mid);
      else {
        this.send({ op: 'freshness', mid, live: true, at: now });
        live.push(mid);
      }
    }
    this.deps.ledger.live(this, live, stale);
    this.told.clear();
  }

  /**
   * A probe when it was sent something (`sent` bytes in all) since the last, at most once `every`
   * ms, so what it reads is known: at once after a round (0); at a look, once an eighth of the
   * bound while it is tight (what it has read must keep pace with its window), once a quarter
   * while it is not. Each probe is a pong to read, and a loose socket found stalled a quarter later
   * is still found within three quarters of the bound (a probe waiting half of it).
   */
  private probe(now: number, sent: number, every: number): void {
    if (this.ended || this.ending) return;
    const last = this.link.lastProbe;
    if (last ? last.sent === sent || now - last.at < every : sent === 0) return;
    const bytes = this.link.probe(now, sent);
    if (bytes) this.conn.ping(bytes);
  }


  /** Drops a market wherever it stood, and says what it held of it; undefined when it did not take it. */
  private drop(mid: string): Holding | undefined {
    const s = this.subs.get(mid);
    if (!s) return undefined;
    const held: Holding = [mid, this.holds(mid, s)];
    if (!this.owed.delete(mid)) this.leave(mid, s);
    this.subs.delete(mid);
    this.told.delete(mid);
    this.deps.index.drop(this, mid, s.variant);
    return held;
  }

  /** What the client holds of a market it takes: what it held when it was owed the market, else what the market's topic handed it. */
  private holds(mid: string, s: Sub): HeldPosition {
    return this.owed.has(mid) ? this.owed.get(mid)!.held : this.deps.publishing.handed(mid, s.variant);
  }

  /** On the market's topic from now on, counting what it carries from here. */
  private join(mid: string, s: Sub, entry: BookEntry | undefined): void {
    if (this.ending) return;
    s.base = s.indexed.topic.bytes;
    this.conn.subscribe(topicOf(s.variant, mid));
    this.deps.publishing.joined(mid, s.indexed, entry);
  }

  /** Off the market's topic: what it carried meanwhile counts as sent. */
  private leave(mid: string, s: Sub): void {
    this.settled += s.indexed.topic.bytes - s.base;
    if (!this.ended) this.conn.unsubscribe(topicOf(s.variant, mid));
  }
}
