import type { FreshnessMessage, PublisherStaleReason, StaleReason } from '../odds/messages.js';
import type { Bus, FreshnessHandler, SourceFreshness, SourceReason } from '../bus/types.js';
import type { Book } from '../odds/book.js';
import type { ReadModel } from '../refdata/model.js';
import type { Clock, Ticker } from '../lib/clock.js';
import type { Component } from '../lib/component.js';

/** The liveness interval a publisher connection may declare (`/ingest?live=`), in ms; REST keys and the simulator take the default. */
export const LIVENESS = { min: 1000, max: 60000, default: 5000 } as const;

/** A liveness interval written as text, or undefined unless it is a whole number of ms within LIVENESS. */
export function parseLiveness(text: string): number | undefined {
  const ms = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  return ms >= LIVENESS.min && ms <= LIVENESS.max ? ms : undefined;
}

/** Intervals a publisher may miss: silent for longer than this many, its markets are stale. */
const MISSED = 2;
/** How often silence is looked for: a `publisher` frame comes at most this late after two missed intervals. */
const CHECK_MS = 250;

/**
 * One publisher as freshness sees it: an `/ingest` connection, a REST key, or the demo simulator.
 * Its edge tells it every sign of life (`heard`) and its end (`close`); ingest names it as the
 * sender of each odds and stale item, which makes it the market's feeder. Written by the tracker
 * alone: the methods only tell it.
 */
export class Feeder {
  /** Markets whose newest odds or stale item came from this feeder. */
  readonly markets = new Set<string>();
  /** The newest source time (`ts`) of an image accepted from it, per market it feeds: an older one is out of order. */
  readonly times = new Map<string, number>();
  lastHeard: number;
  silent = false;
  closed = false;

  /** `replay`: it publishes a recording, whose source times are its own (ingest/source-time.ts). */
  constructor(private readonly tracker: Freshness, readonly liveMs: number, now: number, readonly replay = false) {
    this.lastHeard = now;
  }

  /** Anything the publisher sent, even a message that was refused. */
  heard(): void {
    this.tracker.heard(this);
  }

  /** The connection ended: its markets are stale at once. */
  close(): void {
    this.tracker.closed(this);
  }

  /** Its markets are stale (`publisher`) once it disconnected or fell silent. */
  gone(): boolean {
    return this.closed || this.silent;
  }
}

/** A market fed through another pod: that pod's view of it, and whether the pod is still heard. */
interface Remote {
  pod: string;
  why: SourceReason | undefined;
  at: number;
}

interface FreshnessEntry {
  mid: string;
  owner: Feeder | Remote | undefined;
  late: boolean;
  unreliable: boolean;
  /** What sockets were last told: undefined is live. */
  why: StaleReason | undefined;
  at: number;
  /** The source reason last shared with other pods while a feeder here feeds it; null: not shared yet. */
  shared: SourceReason | undefined | null;
}

/** Told of every market whose state changed, once per change: the broadcaster's state path, to the market's subscribers. */
export interface FreshnessListener {
  publishState(msg: FreshnessMessage): void;
}

/** The markets this pod knows of. */
export interface MarketsHere {
  /** Whether a market exists here: other pods' reports of others are dropped. */
  known(mid: string): boolean;
  /** Every market with an image here: all of them are stale while the bus is down. */
  held(): Iterable<string>;
}

/** The markets of the read model, and those with an image in the book. */
export class KnownMarkets implements MarketsHere {
  constructor(
    private readonly model: Pick<ReadModel, 'typeOf'>,
    private readonly book: Pick<Book, 'get' | 'values'>,
  ) {}

  known(mid: string): boolean {
    return this.model.typeOf(mid) !== undefined || this.book.get(mid) !== undefined;
  }

  *held(): Iterable<string> {
    for (const e of this.book.values()) yield e.marketId;
  }
}

export interface FreshnessDeps {
  listener: FreshnessListener;
  /** Tells other pods the state of markets this pod's publishers feed (nothing with one process). */
  bus: Pick<Bus, 'shareFreshness'>;
  markets: MarketsHere;
  clock: Clock;
}

const isRemote = (o: FreshnessEntry['owner']): o is Remote => o !== undefined && !(o instanceof Feeder);

/**
 * The one owner of every market's freshness: live, or stale with why (docs/protocol.md#freshness).
 * Its inputs are publishers' liveness (their edges call `heard`, `closed`), what ingest made of
 * each odds and stale item (`fed`, `marked`, `refused`), the bus (`busDown`), and, with several
 * pods, the states other pods report for markets their publishers feed (`reported`) and which
 * pods fell silent (`pod`). Each change of a market goes out once, at once, to its `FreshnessListener`.
 * It holds one entry per market known here that was fed, stale, or held while the bus was down,
 * forgets a market the read model deletes, and one feeder per open publisher connection and per
 * REST key that posted.
 */
export class Freshness implements FreshnessHandler, Component {
  readonly name = 'freshness';
  private readonly entries = new Map<string, FreshnessEntry>();
  /** Open connections, REST keys and the simulator, checked for silence. */
  private readonly feeders = new Set<Feeder>();
  private readonly restFeeders = new Map<string, Feeder>();
  /** Markets fed through each other pod, and whether that pod fell silent. */
  private readonly pods = new Map<string, { silent: boolean; markets: Set<string> }>();
  private readonly counts: Record<StaleReason, number> = { bus: 0, publisher: 0, unreliable: 0, late: 0 };
  private busIsDown = false;
  private pending: Map<string, SourceFreshness> | undefined;
  private timer: Ticker | undefined;
  private readonly now: () => number;

  constructor(private readonly deps: FreshnessDeps) {
    this.now = () => deps.clock.now();
  }

  start(): void {
    this.timer ??= this.deps.clock.every(CHECK_MS, () => this.check());
  }

  stop(): void {
    this.timer?.stop();
    this.timer = undefined;
  }

  /** A publisher connection opened, with its liveness interval, publishing live or a recording. */
  connect(liveMs: number = LIVENESS.default, replay = false): Feeder {
    const f = new Feeder(this, liveMs, this.now(), replay);
    this.feeders.add(f);
    return f;
  }

  /**
   * The feeder of a REST publisher's key, at the default interval: every accepted POST is a sign
   * of life; it never disconnects, it only falls silent, or closes when its key is revoked. One
   * per key that posted (keys are few and stored): kept, so a batch still in flight never names
   * a feeder no longer watched.
   */
  rest(keyId: string): Feeder {
    let f = this.restFeeders.get(keyId);
    if (!f) this.restFeeders.set(keyId, (f = this.connect()));
    return f;
  }

  /** A key was revoked: what it fed over REST is stale at once (its sockets close, and their feeders with them). */
  revoked(keyId: string): void {
    const f = this.restFeeders.get(keyId);
    if (!f) return;
    this.restFeeders.delete(keyId);
    this.closed(f);
  }

  /** An odds image of `feeder`, with source time `ts`, was accepted: it feeds the market, now fresh unless the image is late. */
  fed(feeder: Feeder | undefined, mid: string, late: boolean, ts?: number): void {
    const e = this.claim(feeder, mid);
    if (feeder && ts !== undefined) feeder.times.set(mid, ts);
    e.late = late;
    e.unreliable = false;
    this.update(e);
  }

  /** A `stale` item: the publisher says the market is late or unreliable, until its next image. */
  marked(feeder: Feeder | undefined, mid: string, why: PublisherStaleReason): void {
    const e = this.claim(feeder, mid);
    e[why] = true;
    this.update(e);
  }

  /** An odds image of a known market was refused: what subscribers hold is unreliable until its next accepted image. */
  refused(feeder: Feeder | undefined, mid: string): void {
    const e = this.claim(feeder, mid);
    e.unreliable = true;
    this.update(e);
  }

  /** The bus that numbers prices went down (every market held here is stale) or is back and synced. */
  busDown(down: boolean): void {
    if (down === this.busIsDown) return;
    this.busIsDown = down;
    for (const mid of this.deps.markets.held()) this.entry(mid);
    for (const e of this.entries.values()) this.update(e);
  }

  /** The read model deleted a market: its entry goes, with no frame (its subscribers are detached). */
  forget(mid: string): void {
    const e = this.entries.get(mid);
    if (!e) return;
    this.disown(e);
    if (e.why) this.counts[e.why]--;
    this.entries.delete(mid);
    this.pending?.delete(mid);
  }

  /** Another pod's publishers feed these markets, in these states: that pod feeds them from now on. */
  reported(pod: string, states: readonly SourceFreshness[]): void {
    for (const s of states) {
      if (!this.deps.markets.known(s.mid)) continue;
      const e = this.entry(s.mid);
      if (!isRemote(e.owner) || e.owner.pod !== pod) {
        this.disown(e);
        let p = this.pods.get(pod);
        if (!p) this.pods.set(pod, (p = { silent: false, markets: new Set() }));
        p.markets.add(e.mid);
      }
      e.owner = { pod, why: s.why, at: s.at };
      e.late = e.unreliable = false;
      e.shared = null;
      this.update(e);
    }
  }

  /** Another pod fell silent (its markets are stale, `publisher`) or is heard again. */
  pod(pod: string, alive: boolean): void {
    const p = this.pods.get(pod);
    if (!p || p.silent === !alive) return;
    p.silent = !alive;
    for (const mid of p.markets) this.update(this.entries.get(mid)!);
  }

  /** The markets this pod's publishers feed, in the state other pods should show: for a pod that joined, or a bus that came back. */
  fedHere(): SourceFreshness[] {
    const out: SourceFreshness[] = [];
    for (const e of this.entries.values()) if (e.owner instanceof Feeder) out.push({ mid: e.mid, why: this.sourceWhy(e), at: e.at });
    return out;
  }

  /** Stale markets by reason, for the metrics. */
  staleCounts(): Readonly<Record<StaleReason, number>> {
    return this.counts;
  }

  /** Called by a feeder: a sign of life. */
  heard(f: Feeder): void {
    f.lastHeard = this.now();
    if (!f.silent) return;
    f.silent = false;
    for (const mid of f.markets) this.update(this.entries.get(mid)!);
  }

  /** Called by a feeder: its connection ended. */
  closed(f: Feeder): void {
    if (f.closed) return;
    f.closed = true;
    this.feeders.delete(f);
    for (const mid of f.markets) this.update(this.entries.get(mid)!);
  }

  /** The timer: feeders silent past two intervals make their markets stale. */
  check(): void {
    const now = this.now();
    for (const f of this.feeders) {
      const silent = now - f.lastHeard > MISSED * f.liveMs;
      if (silent === f.silent) continue;
      f.silent = silent;
      for (const mid of f.markets) this.update(this.entries.get(mid)!);
    }
  }

  private entry(mid: string): FreshnessEntry {
    let e = this.entries.get(mid);
    if (!e) this.entries.set(mid, (e = { mid, owner: undefined, late: false, unreliable: false, why: undefined, at: this.now(), shared: null }));
    return e;
  }

  /** The market's newest item came from `feeder`: it feeds the market from now on. */
  private claim(feeder: Feeder | undefined, mid: string): FreshnessEntry {
    const e = this.entry(mid);
    if (!feeder || e.owner === feeder) return e;
    this.disown(e);
    e.owner = feeder;
    // Other pods learn who feeds it even when its state does not change.
    e.shared = null;
    feeder.markets.add(mid);
    return e;
  }

  private disown(e: FreshnessEntry): void {
    const o = e.owner;
    if (o instanceof Feeder) {
      o.markets.delete(e.mid);
      o.times.delete(e.mid);
    } else if (o) {
      const p = this.pods.get(o.pod);
      p?.markets.delete(e.mid);
      if (p && !p.markets.size) this.pods.delete(o.pod);
    }
    e.owner = undefined;
  }

  /** What the market's source says: its publisher gone or silent, or what the publisher flagged. */
  private sourceWhy(e: FreshnessEntry): SourceReason | undefined {
    const o = e.owner;
    if (isRemote(o)) return this.pods.get(o.pod)?.silent ? 'publisher' : o.why;
    if (o?.gone()) return 'publisher';
    return e.unreliable ? 'unreliable' : e.late ? 'late' : undefined;
  }

  /** Recomputes a market's state; a change is told to sockets, and to other pods when this pod feeds it. */
  private update(e: FreshnessEntry): void {
    const source = this.sourceWhy(e);
    const why = this.busIsDown ? 'bus' : source;
    if (why !== e.why) {
      if (e.why) this.counts[e.why]--;
      if (why) this.counts[why]++;
      e.why = why;
      // A remote report keeps its pod's time when it is what is shown; any other change begins now.
      e.at = isRemote(e.owner) && why === e.owner.why ? e.owner.at : this.now();
      this.deps.listener.publishState(why ? { op: 'freshness', mid: e.mid, live: false, why, at: e.at } : { op: 'freshness', mid: e.mid, live: true, at: e.at });
    }
    if (e.owner instanceof Feeder && source !== e.shared) {
      e.shared = source;
      this.share({ mid: e.mid, why: source, at: source === why ? e.at : this.now() });
    }
  }

  /** Shares go out together once the current turn's items are all judged (one ingest batch is one message). */
  private share(s: SourceFreshness): void {
    if (!this.pending) {
      this.pending = new Map();
      queueMicrotask(() => {
        const states = [...this.pending!.values()];
        this.pending = undefined;
        if (states.length) this.deps.bus.shareFreshness(states);
      });
    }
    this.pending.set(s.mid, s);
  }
}
