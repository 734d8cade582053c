import { CLOSE } from '../errors.js';
import type { Book } from '../odds/book.js';
import type { Logger } from '../log.js';
import type { OddsMetrics } from '../metrics/odds.js';
import type { Broadcaster, SendWatcher } from './broadcaster.js';
import type { Hub, SessionWatcher } from './hub.js';
import type { Session } from './session.js';
import type { MarketStates } from './states.js';
import type { SocketLedger } from '../record/ledger.js';

export interface SweepLimits {
  /** Buffered bytes above which a socket falls behind (off its topics). */
  slowBytes: number;
  /** Buffered bytes above which a socket is closed at once. */
  maxBytes: number;
  /** How long a socket may stay backed up (over a quarter of `slowBytes`) or behind before it is closed. */
  slowCloseMs: number;
}

export interface SweepDeps {
  bc: Broadcaster;
  hub: Hub;
  book: Book;
  /** Read only: the broadcaster writes it. */
  states: Pick<MarketStates, 'revision' | 'since'>;
  limits: SweepLimits;
  metrics: OddsMetrics;
  log: Logger;
  /** Told when a socket falls behind and catches up (the record; none with RECORD=off). */
  ledger?: SocketLedger;
}

/** How often the sweep runs; heartbeats are due to within this. */
const SWEEP_MS = 100;

/**
 * The periodic pass that decides, socket by socket, when one falls behind,
 * catches up, is closed, or is owed a heartbeat. It touches only sockets that
 * need it: those the broadcaster said it sent something to since the last
 * pass, those known to hold buffered data, and those whose heartbeat falls
 * due, kept in buckets by due time. An idle socket costs one look per
 * heartbeat interval.
 *
 * Each socket is handled alone, and never slows a publisher: over its soft
 * limit it falls behind (off its topics, so its frames are skipped and nobody
 * else waits) and catches up with what changed once drained; it is closed
 * (4008) over the hard limit, or once it has stayed backed up, over a quarter
 * of the soft limit, for `slowCloseMs` without draining, whether or not it
 * fell further behind: a socket that stops reading must not hold its buffer
 * for ever.
 */
export class Sweeper implements SessionWatcher, SendWatcher {
  /** Sockets holding buffered data or behind at the last pass. */
  private readonly watched = new Set<Session>();
  /** Since the last pass: sockets sent a frame directly, and markets published to. */
  private touched = new Set<Session>();
  private published = new Set<string>();
  /** When each socket started holding a backlog it has not drained since. */
  private readonly backedSince = new Map<Session, number>();
  private readonly due = new Map<number, Set<Session>>();
  /** The bucket that holds each socket until its heartbeat falls due. */
  private readonly slots = new Map<Session, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: SweepDeps) {}

  start(): void {
    this.timer = setInterval(() => this.run(Date.now()), SWEEP_MS);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  sentTo(s: Session): void {
    this.touched.add(s);
  }

  publishedTo(mid: string): void {
    this.published.add(mid);
  }

  opened(s: Session, now = Date.now()): void {
    this.schedule(s, now + s.hbMs);
  }

  /** A closed socket leaves at once: its session, and what it took, must not wait for its heartbeat to fall due. */
  closed(s: Session): void {
    this.watched.delete(s);
    this.touched.delete(s);
    this.backedSince.delete(s);
    const slot = this.slots.get(s);
    this.slots.delete(s);
    if (slot === undefined) return;
    const set = this.due.get(slot);
    set?.delete(s);
    if (set?.size === 0) this.due.delete(slot);
  }

  /** uWS's drain callback: a socket behind that emptied its buffer catches up at once. */
  drained(s: Session): void {
    if (s.lag && s.buffered() <= this.deps.limits.slowBytes / 4) this.catchUp(s);
  }

  run(now: number): void {
    for (const s of this.candidates()) this.check(s, now);
    const slot = Math.floor(now / SWEEP_MS);
    for (const [at, list] of this.due) {
      if (at > slot) continue;
      this.due.delete(at);
      for (const s of list) if (!s.closed) this.heartbeat(s, now);
    }
  }

  private candidates(): Set<Session> {
    const out = new Set(this.watched);
    const { hub } = this.deps;
    for (const s of this.touched) out.add(s);
    let reach = 0;
    for (const mid of this.published) reach += hub.market(mid)?.sessions.size ?? 0;
    // Under broad load every socket was touched: one pass over all of them is cheaper than over each market's.
    if (reach >= hub.size) for (const s of hub.sessions()) out.add(s);
    else for (const mid of this.published) for (const s of hub.market(mid)?.sessions ?? []) out.add(s);
    this.touched = new Set();
    this.published = new Set();
    return out;
  }

  private check(s: Session, now: number): void {
    if (s.closed) {
      this.watched.delete(s);
      return;
    }
    const { limits } = this.deps;
    const buffered = s.buffered();
    const backed = buffered > limits.slowBytes / 4;
    if (!backed) this.backedSince.delete(s);
    else if (!this.backedSince.has(s)) this.backedSince.set(s, now);
    const backedMs = now - (this.backedSince.get(s) ?? now);
    if (buffered > limits.maxBytes || backedMs > limits.slowCloseMs || (s.lag && now - s.lag.since > limits.slowCloseMs)) {
      this.close(s, buffered, backedMs);
      return;
    }
    // What its topics handed it, not the book's newest: an image still queued for this turn, or held
    // back by its conflation interval, never reaches it off its topics, and its catch-up must send it.
    if (!s.lag && buffered > limits.slowBytes) {
      s.fallBehind(now, (mid, v) => this.deps.bc.handed(mid, v), this.deps.states.revision);
      this.deps.ledger?.fellBehind(s);
    } else if (s.lag && !backed) this.catchUp(s);
    if (buffered > 0 || s.lag) this.watched.add(s);
    else this.watched.delete(s);
  }

  private close(s: Session, buffered: number, backedMs: number): void {
    this.deps.log.warn('closing slow consumer', { socket: s.id, client: s.client, buffered, backedMs });
    this.deps.metrics.slowCloses.inc();
    this.watched.delete(s);
    this.backedSince.delete(s);
    this.deps.hub.end(s, CLOSE.SLOW);
  }

  /**
   * Back on its topics once drained, with everything that changed while it was
   * behind: the newest image of each market that moved (`con: true`), the
   * `market` and `result` frames that changed, and one `unsubscribed` for the
   * markets it lost meanwhile, after their final state. Its book then equals
   * the server's.
   */
  private catchUp(s: Session): void {
    const { bc, book, states, metrics } = this.deps;
    if (!s.lag) return;
    bc.flush();
    s.cork(() => {
      const lag = s.catchUp();
      if (!lag) return;
      this.deps.ledger?.caughtUp(s);
      metrics.resyncs.inc();
      for (const [mid, v] of s.markets) {
        const e = book.get(mid);
        const had = lag.seqs.get(mid);
        if (e && (!had || had.epoch !== e.epoch || had.seq !== e.seq)) {
          if (had) metrics.framesSkipped.inc(had.epoch === e.epoch ? e.seq - had.seq : 1);
          bc.sendFrame(s, e.frame(s.format, 'con', v.depth));
        }
        bc.joined(mid, v, e);
        for (const msg of states.since(mid, lag.stateRev)) bc.send(s, msg);
      }
      if (!lag.lost.size) return;
      for (const mid of lag.lost) for (const msg of states.since(mid, lag.stateRev)) bc.send(s, msg);
      bc.send(s, { op: 'unsubscribed', mids: [...lag.lost] });
    });
  }

  /** A heartbeat only after `hb` ms with no frame at all, counting frames from the socket's markets' topics. */
  private heartbeat(s: Session, now: number): void {
    let last = s.lastSendAt;
    for (const mid of s.markets.keys()) {
      const pt = this.deps.book.get(mid)?.pt;
      if (pt !== undefined && pt > last) last = pt;
    }
    if (now - last >= s.hbMs) {
      this.deps.bc.send(s, { op: 'hb', ts: now });
      last = now;
    }
    this.schedule(s, last + s.hbMs);
  }

  private schedule(s: Session, at: number): void {
    const slot = Math.ceil(at / SWEEP_MS);
    this.slots.set(s, slot);
    const set = this.due.get(slot);
    if (set) set.add(s);
    else this.due.set(slot, new Set([s]));
  }
}
