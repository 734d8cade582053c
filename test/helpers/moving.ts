import { seeded } from './random.js';

/** Prices a side may use: back below the runner's base price, lay above, so every book is valid and never crossed. */
const GRID = 14;
/** The most levels a side may carry at ingest. */
const MAX_LEVELS = 10;
const round = (x: number) => Math.round(x * 100) / 100;

interface RunnerState {
  rid: number;
  base: number;
  /** Grid step to size, per side; a missing step is a price with no money on it. */
  back: Map<number, number>;
  lay: Map<number, number>;
  ltp: number;
  tv: number;
}

/**
 * A runner market that moves the way exchange markets do, one step at a time: mostly one or two
 * ladder levels of one runner change size, prices vanish and reappear (shifting the levels
 * below them), what traded moves, and on a schedule the market is suspended and reopened, a
 * runner is removed and put back, and the market's total goes unknown for one image. Seeded, so
 * every run sees the same stream. Each step returns the image as a publisher sends it.
 */
export class MovingMarket {
  private readonly random: () => number;
  private readonly all: RunnerState[];
  private out = new Set<number>();
  private step = 0;
  private suspended = false;

  constructor(readonly mid: string, runners: number, seed = 1, levels = 10) {
    this.random = seeded(seed);
    this.all = Array.from({ length: runners }, (_, i) => {
      const r: RunnerState = { rid: i + 1, base: 2 + i * 0.5, back: new Map(), lay: new Map(), ltp: 2 + i * 0.5, tv: 100 };
      for (let j = 0; j < levels; j++) {
        r.back.set(j, 10 + j);
        r.lay.set(j, 20 + j);
      }
      return r;
    });
  }

  /** The market as reference data, so ingest knows it: a runner market of the demo's event 30000001. */
  market(): Record<string, unknown> {
    return { kind: 'market', mid: this.mid, eid: 30000001, na: `Moving ${this.mid}`, ty: 'match-odd', r: this.all.map((x) => ({ rid: x.rid, na: `Runner ${x.rid}` })) };
  }

  private pick<T>(xs: T[]): T {
    return xs[Math.floor(this.random() * xs.length)];
  }

  /** The next image after one more change; `scheduled` false leaves out suspensions, runner changes and unknown totals. */
  next(scheduled = true): Record<string, unknown> {
    const k = ++this.step;
    const live = this.all.filter((r) => !this.out.has(r.rid));
    if (scheduled && k % 40 === 13) this.suspended = !this.suspended;
    else if (scheduled && k % 50 === 20) this.out.add(this.pick(live).rid);
    else if (scheduled && k % 50 === 45) this.out.clear();
    else this.move(this.pick(live), this.random());
    return this.image(scheduled && k % 60 === 30);
  }

  private move(r: RunnerState, roll: number): void {
    const side = this.random() < 0.5 ? r.back : r.lay;
    const step = Math.floor(this.random() * GRID);
    if (roll < 0.55) {
      const at = side.has(step) ? step : [...side.keys()][0];
      if (at !== undefined) side.set(at, round(1 + this.random() * 500));
      const below = at === undefined ? undefined : at + 1;
      if (roll < 0.2 && below !== undefined && side.has(below)) side.set(below, round(1 + this.random() * 500));
    } else if (roll < 0.85) {
      if (side.has(step)) side.delete(step);
      else if (side.size < MAX_LEVELS) side.set(step, round(1 + this.random() * 500));
      else side.delete([...side.keys()][0]);
    } else {
      r.ltp = round(r.base - 0.01 * Math.floor(this.random() * 3));
      r.tv = round(r.tv + this.random() * 50);
    }
  }

  private image(unknownTotal: boolean): Record<string, unknown> {
    const runners = this.all.filter((r) => !this.out.has(r.rid));
    const r = runners.map((x) => ({
      rid: x.rid,
      st: this.suspended ? 'SUSPENDED' : 'ACTIVE',
      b: [...x.back].sort((a, b) => a[0] - b[0]).map(([j, size]) => [round(x.base - 0.01 * j), size]),
      l: [...x.lay].sort((a, b) => a[0] - b[0]).map(([j, size]) => [round(x.base + 0.01 * (j + 1)), size]),
      ltp: x.ltp,
      tv: x.tv,
    }));
    const item: Record<string, unknown> = { kind: 'odds', mid: this.mid, ts: Date.now(), st: this.suspended ? 'SUSPENDED' : 'OPEN', ip: true, r };
    if (!unknownTotal) item.tv = round(runners.reduce((sum, x) => sum + x.tv, 0));
    return item;
  }
}
