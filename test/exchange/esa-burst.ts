/**
 * A burst as a busy Saturday brings it, played by the local stream server: `markets` full-depth
 * markets, then `rate` market changes a second for `seconds`, each moving one runner's ladder on
 * the exchange's ticks (a size changed, or the price stepping a tick with a level leaving one
 * end and another joining the other), books valid at every step. The server keeps the books, as
 * the exchange does, and writes to a client only while it keeps up: when more than 256 KiB it
 * wrote wait in the socket (the client stopped reading), it conflates, as the exchange does for a
 * slow client, and sends each market's moved levels once the socket drains, marked `con`. Shared by
 * test/cli/betfair.test.ts and bench/exchange-burst.ts.
 */
import type { EsaConnection } from './esa-server.js';
import { TICKS } from './fixtures.js';
import { seeded } from '../helpers/random.js';

type Ladder = Map<number, number>;
interface Runner { id: number; at: number; back: Ladder; lay: Ladder }
interface Market { mid: string; runners: Runner[] }

/** Market changes a message carries. */
const PER_MESSAGE = 100;
/**
 * Bytes written and not yet taken by the client past which it is slow and the stream conflates:
 * well above what one tick writes (a few tens of KB), so only a client that stops reading gets there.
 */
const BEHIND_BYTES = 256 * 1024;
const DEPTH = 6;
const TICK_MS = 10;

export interface BurstStats {
  /** Market changes made on the exchange. */
  made: number;
  /** Market changes written to the client, conflated ones counted once. */
  written: number;
  /** Times a write found the client's socket full, and the stream conflated. */
  backedUp: number;
  /** Conflated market changes written after the socket drained. */
  conflated: number;
  /** Changes a second the exchange made, over the burst. */
  rate: number;
}

export class Burst {
  readonly markets: Market[];
  readonly stats: BurstStats = { made: 0, written: 0, backedUp: 0, conflated: 0, rate: 0 };
  /** Resolves once the burst is over and every change reached the client's socket. */
  readonly done: Promise<void>;
  private finish!: () => void;
  private readonly rand: () => number;
  private conn: EsaConnection | undefined;
  /** Levels moved while the client's socket was full, by market: runner → side → prices. */
  private readonly dirty = new Map<Market, Map<Runner, { atb: Set<number>; atl: Set<number> }>>();
  private full = false;
  private ended = false;
  private clk = 0;

  constructor(private readonly opts: { markets: number; rate: number; seconds: number; seed?: number }) {
    this.rand = seeded(opts.seed ?? 7);
    this.markets = Array.from({ length: opts.markets }, (_, i) => ({
      mid: `1.27${String(i).padStart(7, '0')}`,
      runners: [0, 1, 2].map((k) => this.runner(70001 + k, 40 + Math.floor(this.rand() * 200))),
    }));
    this.done = new Promise((ok) => (this.finish = ok));
  }

  get mids(): string[] {
    return this.markets.map((m) => m.mid);
  }

  private size = () => Math.round((2 + this.rand() * 500) * 100) / 100;

  private runner(id: number, at: number): Runner {
    const r: Runner = { id, at, back: new Map(), lay: new Map() };
    for (let k = 1; k <= DEPTH; k++) r.back.set(TICKS[at - k], this.size());
    for (let k = 0; k < DEPTH; k++) r.lay.set(TICKS[at + k], this.size());
    return r;
  }

  /** The definition and full book of every market, as a subscription's image. */
  private image(): object {
    return {
      op: 'mcm', id: 2, ct: 'SUB_IMAGE', initialClk: 'burst', clk: 'b0', pt: Date.now(), heartbeatMs: 5000,
      mc: this.markets.map((m, i) => ({
        id: m.mid, img: true,
        marketDefinition: {
          eventId: String(36000000 + Math.floor(i / 10)), eventTypeId: '1', marketType: 'MATCH_ODDS', bettingType: 'ODDS', status: 'OPEN', inPlay: true,
          betDelay: 5, marketTime: '2026-05-02T15:00:00.000Z', openDate: '2026-05-02T15:00:00.000Z', numberOfWinners: 1, complete: true, version: 1,
          timezone: 'Europe/London', name: 'Match Odds', eventName: `Burst match ${Math.floor(i / 10)}`,
          runners: m.runners.map((r, k) => ({ id: r.id, status: 'ACTIVE', sortPriority: k + 1, name: `Side ${k + 1}` })),
        },
        rc: m.runners.map((r) => ({ id: r.id, atb: [...r.back], atl: [...r.lay] })),
      })),
    };
  }

  /** One move of one runner's ladder: the levels it changed. */
  private move(): { m: Market; r: Runner; atb: [number, number][]; atl: [number, number][] } {
    const m = this.markets[Math.floor(this.rand() * this.markets.length)];
    const r = m.runners[Math.floor(this.rand() * m.runners.length)];
    const atb: [number, number][] = [];
    const atl: [number, number][] = [];
    const step = this.rand();
    if (step < 0.7) {
      // A size changes somewhere on the ladder.
      const back = this.rand() < 0.5;
      const price = TICKS[back ? r.at - 1 - Math.floor(this.rand() * DEPTH) : r.at + Math.floor(this.rand() * DEPTH)];
      const size = this.size();
      (back ? r.back : r.lay).set(price, size);
      (back ? atb : atl).push([price, size]);
    } else if (step < 0.85 ? r.at + DEPTH < TICKS.length - 1 : r.at - DEPTH - 1 <= 0) {
      // Drifts out a tick: the best lay is taken, becoming the best back; the deepest back goes.
      const gone = TICKS[r.at - DEPTH];
      r.back.delete(gone);
      atb.push([gone, 0]);
      r.lay.delete(TICKS[r.at]);
      r.back.set(TICKS[r.at], this.size());
      atb.push([TICKS[r.at], r.back.get(TICKS[r.at])!]);
      r.at++;
      r.lay.set(TICKS[r.at + DEPTH - 1], this.size());
      atl.push([TICKS[r.at - 1], 0], [TICKS[r.at + DEPTH - 1], r.lay.get(TICKS[r.at + DEPTH - 1])!]);
    } else {
      // Shortens a tick: the best back goes, becoming the best lay; the deepest lay goes.
      const gone = TICKS[r.at + DEPTH - 1];
      r.lay.delete(gone);
      atl.push([gone, 0]);
      r.at--;
      r.back.delete(TICKS[r.at]);
      r.lay.set(TICKS[r.at], this.size());
      atl.push([TICKS[r.at], r.lay.get(TICKS[r.at])!]);
      r.back.set(TICKS[r.at - DEPTH], this.size());
      atb.push([TICKS[r.at], 0], [TICKS[r.at - DEPTH], r.back.get(TICKS[r.at - DEPTH])!]);
    }
    return { m, r, atb, atl };
  }

  /** The image the service should end on for a market: each runner's best ten levels a side. */
  expected(mid: string): { rid: number; b: [number, number][]; l: [number, number][] }[] {
    const m = this.markets.find((x) => x.mid === mid)!;
    return m.runners.map((r) => ({
      rid: r.id,
      b: [...r.back].sort((a, b) => b[0] - a[0]).slice(0, 10),
      l: [...r.lay].sort((a, b) => a[0] - b[0]).slice(0, 10),
    }));
  }

  /** The Plan's `play`: the image, then the burst, paced by the clock so a late tick catches up. */
  play(conn: EsaConnection): void {
    this.conn = conn;
    conn.onDrain(() => this.drain());
    this.write(this.image());
    const started = performance.now();
    let made = 0;
    const timer = setInterval(() => {
      const elapsed = Math.min(performance.now() - started, this.opts.seconds * 1000);
      const due = Math.floor((elapsed / 1000) * this.opts.rate) - made;
      const batch: object[] = [];
      for (let i = 0; i < due; i++) {
        const { m, r, atb, atl } = this.move();
        made++;
        if (this.full) {
          this.touch(m, r, atb, atl);
          continue;
        }
        batch.push({ id: m.mid, rc: [{ id: r.id, ...(atb.length ? { atb } : {}), ...(atl.length ? { atl } : {}) }] });
        if (batch.length === PER_MESSAGE) this.send(batch.splice(0));
      }
      if (batch.length) this.send(batch);
      this.stats.made = made;
      if (elapsed >= this.opts.seconds * 1000) {
        clearInterval(timer);
        this.stats.rate = Math.round(made / ((performance.now() - started) / 1000));
        this.ended = true;
        if (!this.full) this.finish();
      }
    }, TICK_MS);
  }


  private send(mc: object[]): void {
    this.stats.written += mc.length;
    this.write({ op: 'mcm', id: 2, clk: `b${++this.clk}`, pt: Date.now(), mc });
  }

  private write(msg: object): void {
    this.conn!.write(msg);
    if (this.full || this.conn!.buffered <= BEHIND_BYTES) return;
    this.full = true;
    this.stats.backedUp++;
  }

  private touch(m: Market, r: Runner, atb: [number, number][], atl: [number, number][]): void {
    let runners = this.dirty.get(m);
    if (!runners) this.dirty.set(m, (runners = new Map()));
    let sides = runners.get(r);
    if (!sides) runners.set(r, (sides = { atb: new Set(), atl: new Set() }));
    for (const [p] of atb) sides.atb.add(p);
    for (const [p] of atl) sides.atl.add(p);
  }

  /** The socket took everything: each market's moved levels as they stand now, conflated. */
  private drain(): void {
    if (!this.full) return;
    this.full = false;
    const mc = [...this.dirty].map(([m, runners]) => ({
      id: m.mid, con: true,
      rc: [...runners].map(([r, s]) => ({
        id: r.id, atb: [...s.atb].map((p) => [p, r.back.get(p) ?? 0]), atl: [...s.atl].map((p) => [p, r.lay.get(p) ?? 0]),
      })),
    }));
    this.dirty.clear();
    this.stats.conflated += mc.length;
    for (let i = 0; i < mc.length; i += PER_MESSAGE) this.send(mc.slice(i, i + PER_MESSAGE));
    if (this.ended && !this.full) this.finish();
  }
}
