import type { Clock, Ticker } from '../lib/clock.js';
import type { MarketIndex } from './market-index.js';
import type { Looks, Subscriber } from './subscriber.js';

/** How often the sweep runs: heartbeats are due to within this, and a socket is probed at most this often. */
export const SWEEP_MS = 100;

/** Told what the broadcaster published, as it publishes it. */
export interface PublishWatcher {
  /** Frames went to every socket on this market's topics. */
  publishedTo(mid: string): void;
  /** A round of publishing ended: sockets close to their windows are looked at now. */
  flushed(): void;
}

/**
 * When subscribers are looked at; what a look decides is each subscriber's own (`check`). It
 * keeps a schedule and nothing of theirs: each subscriber says when it wants its next look
 * (`nextLook`), and is looked at then, or on the next pass when it was sent something
 * (directly, or by a topic of one of its markets), or after every publish while it is close to
 * what its link can carry (tight). An idle socket costs one look per heartbeat interval.
 */
export class Sweep implements Looks, PublishWatcher {
  /** Subscribers by the pass (SWEEP_MS slot) in which they want their next look. */
  private readonly due = new Map<number, Set<Subscriber>>();
  private readonly tightOnes = new Set<Subscriber>();
  /** Markets published to since the last pass: their subscribers are looked at. */
  private published = new Set<string>();
  /** Markets published to since the last flush: only a tight subscriber taking one of them can have more on its way. */
  private sinceFlush = new Set<string>();
  private ticker: Ticker | undefined;

  constructor(private readonly index: MarketIndex<Subscriber>, private readonly clock: Clock) {}

  start(): void {
    this.ticker ??= this.clock.every(SWEEP_MS, () => this.run(this.clock.now()));
  }

  stop(): void {
    this.ticker?.stop();
    this.ticker = undefined;
  }

  /** A subscriber opened: looked at when it asks. */
  add(s: Subscriber): void {
    this.slot(s.nextLook).add(s);
  }

  moved(s: Subscriber, was: number): void {
    this.unslot(s, was);
    this.slot(s.nextLook).add(s);
  }

  tight(s: Subscriber, on: boolean): void {
    if (on && !s.closed) this.tightOnes.add(s);
    else this.tightOnes.delete(s);
  }

  forget(s: Subscriber): void {
    this.unslot(s, s.nextLook);
    this.tightOnes.delete(s);
  }

  publishedTo(mid: string): void {
    this.published.add(mid);
    this.sinceFlush.add(mid);
  }

  /**
   * Tight subscribers taking a market this flush published to: each counts what those topics
   * carried and is looked at now; a publish costs nothing for a socket not on its topics.
   */
  flushed(): void {
    const moved = this.sinceFlush;
    this.sinceFlush = new Set();
    const touched = new Set<Subscriber>();
    for (const mid of moved) {
      for (const s of this.index.market(mid)?.subscribers ?? []) {
        if (!this.tightOnes.has(s)) continue;
        s.carried(mid);
        touched.add(s);
      }
    }
    for (const s of touched) s.published();
  }

  /** One pass: every subscriber due, or touched since the last, looked at once. */
  run(now: number): void {
    const look = new Set<Subscriber>();
    const slot = Math.floor(now / SWEEP_MS);
    for (const [at, set] of this.due) {
      if (at > slot) continue;
      this.due.delete(at);
      for (const s of set) look.add(s);
    }
    for (const mid of this.published) {
      for (const s of this.index.market(mid)?.subscribers ?? []) {
        s.carried(mid);
        look.add(s);
      }
    }
    this.published = new Set();
    for (const s of look) {
      this.unslot(s, s.nextLook);
      const next = s.check(now);
      if (next !== Infinity && !s.closed) this.slot(next).add(s);
    }
  }

  private slot(at: number): Set<Subscriber> {
    const key = Math.ceil(at / SWEEP_MS);
    let set = this.due.get(key);
    if (!set) this.due.set(key, (set = new Set()));
    return set;
  }

  private unslot(s: Subscriber, at: number): void {
    const key = Math.ceil(at / SWEEP_MS);
    const set = this.due.get(key);
    set?.delete(s);
    if (set?.size === 0) this.due.delete(key);
  }
}
