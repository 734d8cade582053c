import { CLOSE } from '../errors.js';
import type { Book } from '../odds/book.js';
import type { Logger } from '../log.js';
import type { OddsMetrics } from '../metrics/odds.js';
import type { Pressure } from './publish-batch.js';
import type { Broadcaster } from './broadcaster.js';
import type { Hub, SessionWatcher } from './hub.js';
import { topicOf, type Session } from './session.js';
import type { MarketStates } from './states.js';

export interface SweepLimits {
  /** Buffered bytes above which a socket falls behind (off its topics). */
  slowBytes: number;
  /** Buffered bytes above which a socket is closed at once. */
  maxBytes: number;
  /** How long a socket may stay behind before it is closed. */
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
}

/** How often the sweep runs; heartbeats are due to within this. */
const SWEEP_MS = 100;

/**
 * The periodic pass that keeps sockets honest: backpressure (behind, caught
 * up, or closed) and heartbeats. It touches only sockets that need it: those
 * sent something since the last pass or known to hold buffered data, and
 * those whose heartbeat falls due, kept in buckets by due time. An idle
 * socket costs one look per heartbeat interval.
 *
 * A socket over its soft backpressure limit falls behind: it is taken off its
 * topics, so its frames are skipped and nobody else waits. Once drained it
 * catches up with what changed meanwhile and is back on its topics.
 */
export class Sweeper implements Pressure, SessionWatcher {
  private readonly watched = new Set<Session>();
  private readonly due = new Map<number, Set<Session>>();
  private timer: NodeJS.Timeout | undefined;
  /** Sockets on their topics found holding a backlog at the last pass. */
  private backed = 0;
  private calmWaiters: (() => void)[] = [];

  constructor(private readonly deps: SweepDeps) {}

  start(): void {
    this.timer = setInterval(() => this.run(Date.now()), SWEEP_MS);
  }

  stop(): void {
    clearInterval(this.timer);
    for (const ok of this.calmWaiters.splice(0)) ok();
  }

  /**
   * Most sockets hold frames they have not read yet: publishing faster would
   * only queue more in memory and delay every frame. A publisher waits for a
   * pass that finds them drained (`eased`), so it feels the backpressure as
   * slower acks.
   */
  busy(): boolean {
    return this.backed * 2 > this.deps.hub.size;
  }

  eased(): Promise<void> {
    return this.busy() ? new Promise((ok) => this.calmWaiters.push(ok)) : Promise.resolve();
  }

  opened(s: Session, now = Date.now()): void {
    this.schedule(s, now + s.hbMs);
  }

  /** A closed socket leaves at once: its session, and what it took, must not wait for its heartbeat to fall due. */
  closed(s: Session): void {
    this.watched.delete(s);
    const set = this.due.get(s.hbSlot);
    set?.delete(s);
    if (set?.size === 0) this.due.delete(s.hbSlot);
  }

  /** uWS's drain callback: a socket behind that emptied its buffer catches up at once. */
  drained(s: Session): void {
    if (s.lag && s.conn.getBufferedAmount() <= this.deps.limits.slowBytes / 4) this.catchUp(s);
  }

  run(now: number): void {
    this.backed = 0;
    for (const s of this.candidates()) this.check(s, now);
    if (!this.busy()) for (const ok of this.calmWaiters.splice(0)) ok();
    const slot = Math.floor(now / SWEEP_MS);
    for (const [at, list] of this.due) {
      if (at > slot) continue;
      this.due.delete(at);
      for (const s of list) if (!s.closed) this.heartbeat(s, now);
    }
  }

  private candidates(): Set<Session> {
    const out = new Set(this.watched);
    const { bc, hub } = this.deps;
    const sent = bc.takeSent();
    for (const s of sent.sockets) out.add(s);
    let reach = 0;
    for (const mid of sent.markets) reach += hub.market(mid)?.sessions.size ?? 0;
    // Under broad load every socket was touched: one pass over all of them is cheaper than over each market's.
    if (reach >= hub.size) for (const s of hub.sessions()) out.add(s);
    else for (const mid of sent.markets) for (const s of hub.market(mid)?.sessions ?? []) out.add(s);
    return out;
  }

  private check(s: Session, now: number): void {
    if (s.closed) {
      this.watched.delete(s);
      return;
    }
    const { limits, log, metrics } = this.deps;
    const buffered = s.conn.getBufferedAmount();
    if (buffered > limits.maxBytes || (s.lag && now - s.lag.since > limits.slowCloseMs)) {
      log.warn('closing slow consumer', { socket: s.id, client: s.client, buffered, behindMs: s.lag ? now - s.lag.since : 0 });
      metrics.slowCloses.inc();
      this.watched.delete(s);
      this.deps.hub.end(s, CLOSE.SLOW);
      return;
    }
    if (!s.lag && buffered > limits.slowBytes) this.fallBehind(s, now);
    else if (s.lag && buffered <= limits.slowBytes / 4) this.catchUp(s);
    if (!s.lag && buffered > limits.slowBytes / 4) this.backed++;
    if (buffered > 0 || s.lag) this.watched.add(s);
    else this.watched.delete(s);
  }

  /**
   * Takes a socket off its topics and notes what it had been sent: uWS never
   * drops frames itself (its limit is off), so everything up to here was
   * queued for it.
   */
  private fallBehind(s: Session, now: number): void {
    const seqs = new Map<string, { epoch: string; seq: number }>();
    for (const [mid, v] of s.subs) {
      s.conn.unsubscribe(topicOf(v, mid));
      const e = this.deps.book.get(mid);
      if (e) seqs.set(mid, { epoch: e.epoch, seq: e.seq });
    }
    s.lag = { since: now, seqs, stateRev: this.deps.states.revision, lost: new Set() };
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
    const lag = s.lag;
    if (!lag) return;
    bc.flush();
    s.lag = undefined;
    metrics.resyncs.inc();
    s.conn.cork(() => {
      for (const [mid, v] of s.subs) {
        s.conn.subscribe(topicOf(v, mid));
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
    for (const mid of s.subs.keys()) {
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
    s.hbSlot = Math.ceil(at / SWEEP_MS);
    const set = this.due.get(s.hbSlot);
    if (set) set.add(s);
    else this.due.set(s.hbSlot, new Set([s]));
  }
}
