/**
 * Recorded Betfair streams of our own making, in the historic data format (one `mcm` message a
 * line), from a seeded generator: the same files every run. Books move on the exchange's price
 * ladder and stay valid at every step (prices 1.01 to 1000, backs below lays); prices leave the
 * book and come back, traded volume grows, markets suspend, go in play and settle.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { seeded } from '../helpers/random.js';

type Obj = Record<string, unknown>;
type Ladder = Map<number, number>;

/** The exchange's price ladder: 1.01 to 1000 in its tick sizes. */
export const TICKS: number[] = (() => {
  const bands: [number, number, number][] = [[1, 2, 0.01], [2, 3, 0.02], [3, 4, 0.05], [4, 6, 0.1], [6, 10, 0.2], [10, 20, 0.5], [20, 30, 1], [30, 50, 2], [50, 100, 5], [100, 1000, 10]];
  const out: number[] = [];
  for (const [from, to, step] of bands) for (let i = 1; from + i * step <= to + 1e-9; i++) out.push(Math.round((from + i * step) * 100) / 100);
  return out;
})();

interface RunnerSim {
  id: number;
  name: string;
  /** Tick index of the best lay; the best back sits one tick below. */
  at: number;
  back: Ladder;
  lay: Ladder;
  trd: Ladder;
  tv: number;
  ltp?: number;
  removed: boolean;
}

export type LadderKind = 'full' | 'best';

/** One market's book and definition, moved a step at a time; each call returns one MarketChange. */
export class MarketSim {
  readonly runners: RunnerSim[];
  def: Obj;
  private marketTv = 0;
  /** Runners the market settles as winners (a place market's places): what a fair book sums to. */
  private readonly winners: number;

  constructor(
    readonly mid: string, def: Obj, names: string[], firstId: number, readonly kind: LadderKind, readonly rand: () => number,
    readonly volumes: { runner: boolean; market: boolean },
  ) {
    // Each runner's chance a share of the market's winners, so the book starts near 100% a winner
    // (a match odds book of 160% is no market anyone would trade): the best lay at or above the fair price.
    const weights = names.map(() => 0.2 + rand());
    const total = weights.reduce((a, b) => a + b, 0);
    this.winners = Number(def.numberOfWinners ?? 1);
    this.runners = names.map((name, i) => ({
      id: firstId + i, name, at: MarketSim.tickAtOrAbove(total / (weights[i] * this.winners)), back: new Map(), lay: new Map(), trd: new Map(), tv: 0, removed: false,
    }));
    this.def = { ...def, runners: this.runners.map((r, i) => ({ status: 'ACTIVE', sortPriority: i + 1, id: r.id, name: r.name })) };
  }

  /** The index of the first tick at or above `price`, kept clear of the ladder's ends. */
  private static tickAtOrAbove(price: number): number {
    const i = TICKS.findIndex((p) => p >= price - 1e-9);
    return Math.min(TICKS.length - 20, Math.max(20, i < 0 ? TICKS.length : i));
  }

  /** The chances the best lays imply, summed: the winners' count for a fair book. */
  book(): number {
    return this.runners.filter((r) => !r.removed).reduce((sum, r) => sum + 1 / TICKS[r.at], 0);
  }

  private size = () => Math.round((2 + this.rand() * 800) * 100) / 100;

  /** The runner's whole book now, with `levels` prices a side. */
  private fresh(r: RunnerSim): { back: Ladder; lay: Ladder } {
    const back: Ladder = new Map();
    const lay: Ladder = new Map();
    const depth = 4 + Math.floor(this.rand() * 12);
    for (let k = 1; k <= depth && r.at - k >= 0; k++) if (this.rand() > 0.15 || k === 1) back.set(TICKS[r.at - k], r.back.get(TICKS[r.at - k]) !== undefined && this.rand() < 0.6 ? r.back.get(TICKS[r.at - k])! : this.size());
    for (let k = 0; k < depth && r.at + k < TICKS.length; k++) if (this.rand() > 0.15 || k === 0) lay.set(TICKS[r.at + k], r.lay.get(TICKS[r.at + k]) !== undefined && this.rand() < 0.6 ? r.lay.get(TICKS[r.at + k])! : this.size());
    return { back, lay };
  }

  private static diff(prev: Ladder, next: Ladder): [number, number][] {
    const out: [number, number][] = [];
    for (const p of prev.keys()) if (!next.has(p)) out.push([p, 0]);
    for (const [p, s] of next) if (prev.get(p) !== s) out.push([p, s]);
    return out;
  }

  /** Position ladders as the best-offers stream sends them: every position whose level moved, [pos, 0, 0] for one gone. */
  private static positions(prev: Ladder, next: Ladder, desc: boolean, n: number): [number, number, number][] {
    const top = (l: Ladder) => [...l].sort((a, b) => (desc ? b[0] - a[0] : a[0] - b[0])).slice(0, n);
    const [a, b] = [top(prev), top(next)];
    const out: [number, number, number][] = [];
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      if (!b[i]) out.push([i, 0, 0]);
      else if (!a[i] || a[i][0] !== b[i][0] || a[i][1] !== b[i][1]) out.push([i, b[i][0], b[i][1]]);
    }
    return out;
  }

  /** The runner change taking `r` from its book to `next`, in this market's ladder kind. */
  private ladderChange(r: RunnerSim, next: { back: Ladder; lay: Ladder }): Obj {
    const rc: Obj = { id: r.id };
    if (this.kind === 'full') {
      const atb = MarketSim.diff(r.back, next.back);
      const atl = MarketSim.diff(r.lay, next.lay);
      if (atb.length) rc.atb = atb;
      if (atl.length) rc.atl = atl;
    } else {
      const keys = [['batb', true, 3], ['batl', false, 3], ['bdatb', true, 10], ['bdatl', false, 10]] as const;
      for (const [key, desc, n] of keys) {
        const moved = MarketSim.positions(desc ? r.back : r.lay, desc ? next.back : next.lay, desc, n);
        if (moved.length) rc[key] = moved;
      }
    }
    r.back = next.back;
    r.lay = next.lay;
    return rc;
  }

  private trade(r: RunnerSim, rc: Obj): void {
    const [price] = this.rand() < 0.5 ? [...r.back].sort((a, b) => b[0] - a[0])[0] ?? [] : [...r.lay].sort((a, b) => a[0] - b[0])[0] ?? [];
    if (price === undefined) return;
    const amount = Math.round(this.rand() * 200 * 100) / 100 + 0.01;
    const total = Math.round(((r.trd.get(price) ?? 0) + amount) * 100) / 100;
    r.trd.set(price, total);
    r.tv = Math.round((r.tv + amount) * 100) / 100;
    this.marketTv = Math.round((this.marketTv + amount) * 100) / 100;
    rc.trd = [[price, total]];
    rc.ltp = r.ltp = price;
    if (this.volumes.runner) rc.tv = r.tv;
  }

  /** A move of one or two runners: the price drifts a tick, sizes change, maybe a trade. */
  step(): Obj {
    const live = this.runners.filter((r) => !r.removed);
    const moving = live.filter(() => this.rand() < 0.4);
    if (!moving.length) moving.push(live[Math.floor(this.rand() * live.length)]);
    const rc = moving.map((r) => {
      // A drift that keeps the book near its winners: a price lengthens (its chance falls) more often while the book is over.
      if (this.rand() < 0.35) r.at = Math.min(TICKS.length - 20, Math.max(20, r.at + (this.rand() < (this.book() > this.winners ? 0.3 : 0.7) ? -1 : 1)));
      const change = this.ladderChange(r, this.fresh(r));
      if (this.rand() < 0.5) this.trade(r, change);
      return change;
    });
    const mc: Obj = { id: this.mid, rc };
    if (this.volumes.market && rc.some((c) => c.trd)) mc.tv = this.marketTv;
    if (this.rand() < 0.05) mc.con = true;
    return mc;
  }

  /** The whole market afresh (`img`), as a subscription's first message or a resubscription sends it. */
  image(withDefinition: boolean): Obj {
    const rc = this.runners.map((r) => {
      const next = r.removed ? { back: new Map(), lay: new Map() } : this.fresh(r);
      r.back = new Map();
      r.lay = new Map();
      const change = this.ladderChange(r, next);
      if (r.trd.size) change.trd = [...r.trd];
      if (r.ltp !== undefined) change.ltp = r.ltp;
      if (this.volumes.runner && r.tv) change.tv = r.tv;
      return change;
    });
    return { id: this.mid, img: true, rc, ...(withDefinition ? { marketDefinition: this.def } : {}), ...(this.volumes.market && this.marketTv ? { tv: this.marketTv } : {}) };
  }

  /**
   * A new definition (the stream always sends it whole), version bumped; `runner` changes each
   * runner's definition beyond its status (an adjustment factor, a removal date).
   */
  define(changes: Obj, runnerStatus?: (r: RunnerSim) => string, runner?: (rd: Obj, i: number) => Obj): Obj {
    const runners = (this.def.runners as Obj[]).map((rd, i) => ({ ...(runner ? runner(rd, i) : rd), status: runnerStatus ? runnerStatus(this.runners[i]) : rd.status }));
    this.def = { ...this.def, ...changes, runners, version: (this.def.version as number) + 1 };
    return { id: this.mid, marketDefinition: this.def };
  }

  /**
   * Takes a runner out: REMOVED in the definition, its offers withdrawn, and the others' prices
   * shortened by its share (as the exchange's reduction factor does), so the book stays whole;
   * with `removalDate`, the definition says when.
   */
  remove(index: number, removalDate?: string): Obj {
    const r = this.runners[index];
    r.removed = true;
    const mc = this.define({}, (x) => (x.removed ? 'REMOVED' : 'ACTIVE'), (rd, i) => (i === index && removalDate ? { ...rd, removalDate } : rd));
    const factor = this.book() / this.winners;
    const others = this.runners.filter((x) => !x.removed).map((x) => {
      x.at = MarketSim.tickAtOrAbove(TICKS[x.at] * factor);
      return this.ladderChange(x, this.fresh(x));
    });
    return { ...mc, rc: [this.ladderChange(r, { back: new Map(), lay: new Map() }), ...others] };
  }

  /** Settles: the winners and losers in the definition, CLOSED, and every offer withdrawn. */
  settle(winners: number[]): Obj {
    const mc = this.define({ status: 'CLOSED', complete: true, settledTime: '2026-05-01T16:00:00.000Z' }, (r) => (r.removed ? 'REMOVED' : winners.includes(this.runners.indexOf(r)) ? 'WINNER' : 'LOSER'));
    return { ...mc, rc: this.runners.filter((r) => r.back.size || r.lay.size).map((r) => this.ladderChange(r, { back: new Map(), lay: new Map() })) };
  }
}

export const definition = (eventTypeId: string, eventId: string, marketType: string, name: string, eventName: string, winners = 1): Obj => ({
  bspMarket: false, turnInPlayEnabled: true, persistenceEnabled: true, marketBaseRate: 5, eventId, eventTypeId, numberOfWinners: winners,
  bettingType: 'ODDS', marketType, marketTime: '2026-05-01T14:00:00.000Z', suspendTime: '2026-05-01T14:00:00.000Z', bspReconciled: false,
  complete: true, inPlay: false, crossMatching: true, runnersVoidable: false, numberOfActiveRunners: 0, betDelay: 0, status: 'OPEN',
  regulators: ['MR_INT'], countryCode: 'GB', discountAllowed: true, timezone: 'Europe/London', openDate: '2026-05-01T14:00:00.000Z',
  version: 4000000000, priceLadderDefinition: { type: 'CLASSIC' }, name, eventName,
});

/** Messages with `pt` rising from a start, one to three seconds apart (never equal). */
export class Clock {
  private pt = Date.UTC(2026, 4, 1, 12, 0, 0);
  constructor(private readonly rand: () => number) {}
  message(mc: Obj[]): Obj {
    this.pt += 100 + Math.floor(this.rand() * 2900);
    return { op: 'mcm', clk: this.pt.toString(36), pt: this.pt, mc };
  }
}

/** A soccer match odds market, full depth: pre-play, in play with a bet delay, suspensions, a refresh image, settlement. */
export function matchOdds(steps: number, seed = 1, mid = '1.240000001'): Obj[] {
  const rand = seeded(seed);
  const clock = new Clock(rand);
  const m = new MarketSim(mid, definition('1', '34000001', 'MATCH_ODDS', 'Match Odds', 'Harbour Town v Mill Rovers'), ['Harbour Town', 'Mill Rovers', 'The Draw'], 44001, 'full', rand, { runner: true, market: true });
  const out = [clock.message([m.image(true)])];
  const kickOff = Math.floor(steps * 0.4);
  for (let i = 0; i < steps; i++) {
    if (i === kickOff) out.push(clock.message([m.define({ inPlay: true, betDelay: 5 })]));
    if (i > kickOff && i % Math.max(10, Math.floor(steps / 6)) === 0) {
      out.push(clock.message([m.define({ status: 'SUSPENDED' })]), clock.message([m.step()]), clock.message([m.define({ status: 'OPEN' })]));
    }
    out.push(clock.message([i === Math.floor(steps * 0.7) ? m.image(false) : m.step()]));
  }
  out.push(clock.message([m.define({ status: 'SUSPENDED' })]), clock.message([m.settle([0])]));
  return out;
}

/** A race's win and place markets (three places) sharing messages, a non-runner removed before the off; full depth, traded volume given only by price. */
export function race(steps: number, seed = 2): Obj[] {
  const rand = seeded(seed);
  const clock = new Clock(rand);
  const horses = ['Quiet Harbour', 'Red Lantern', 'Sea Glass', 'North Wind', 'Copper Kettle', 'Paper Moon', 'Blue Fern', 'Last Orders'];
  const win = new MarketSim('1.240000101', definition('7', '34000101', 'WIN', '2m Hcap', 'Ludlow 1st May'), horses, 47001, 'full', rand, { runner: false, market: false });
  const place = new MarketSim('1.240000102', definition('7', '34000101', 'PLACE', 'To Be Placed', 'Ludlow 1st May', 3), horses, 47001, 'full', rand, { runner: false, market: false });
  const out = [clock.message([win.image(true), place.image(true)])];
  for (let i = 0; i < steps; i++) {
    if (i === Math.floor(steps * 0.3)) out.push(clock.message([win.remove(4), place.remove(4)]));
    if (i === Math.floor(steps * 0.8)) out.push(clock.message([win.define({ inPlay: true, status: 'SUSPENDED' }), place.define({ inPlay: true, status: 'SUSPENDED' })]), clock.message([win.define({ status: 'OPEN' }), place.define({ status: 'OPEN' })]));
    out.push(clock.message(rand() < 0.3 ? [win.step(), place.step()] : [rand() < 0.5 ? win.step() : place.step()]));
  }
  out.push(clock.message([win.define({ status: 'SUSPENDED' }), place.define({ status: 'SUSPENDED' })]), clock.message([win.settle([2]), place.settle([2, 0, 6])]));
  return out;
}

/** A tennis match odds market on the best-offer ladders (`batb`/`batl` and `bdatb`/`bdatl`), runner and market volumes given. */
export function tennis(steps: number, seed = 3): Obj[] {
  const rand = seeded(seed);
  const clock = new Clock(rand);
  const m = new MarketSim('1.240000201', definition('2', '34000201', 'MATCH_ODDS', 'Match Odds', 'Vale v Moreno'), ['A Vale', 'L Moreno'], 52001, 'best', rand, { runner: true, market: true });
  const out = [clock.message([m.image(true)])];
  for (let i = 0; i < steps; i++) {
    if (i === Math.floor(steps / 2)) out.push(clock.message([m.define({ inPlay: true, betDelay: 3 })]));
    out.push(clock.message([m.step()]));
  }
  out.push(clock.message([m.settle([1])]));
  return out;
}

export const lines = (messages: Obj[]): string => messages.map((m) => JSON.stringify(m)).join('\n') + '\n';

export const BZIP2 = '/usr/bin/bzip2';
export const hasBzip2 = (): boolean => existsSync(BZIP2);

/** Writes the messages as a plain, .gz or .bz2 file and returns its path. */
export async function writeRecording(dir: string, name: string, messages: Obj[]): Promise<string> {
  const path = join(dir, name);
  const text = Buffer.from(lines(messages));
  if (name.endsWith('.gz')) await writeFile(path, gzipSync(text));
  // bzip2's output is as large as the recording asks (bench/replay-recording.ts writes tens of MB): no cap but memory's.
  else if (name.endsWith('.bz2')) await writeFile(path, execFileSync(BZIP2, ['-c'], { input: text, maxBuffer: Infinity }));
  else await writeFile(path, text);
  return path;
}
