/**
 * One price model per fixture, from which every market of it is priced: so an outcome has one
 * probability wherever it trades (match odds, the bookmakers, the super over), complementary
 * questions add up (tied and completed, each over/under line from one goals expectation, a
 * tennis match and its first set, a race's place market and its win market), and the whole
 * fixture moves together.
 */
import type { MarketType } from '../refdata/types.js';
import { DRAW, NO, YES } from './markets.js';

/** What one market asks, as the model needs it: its type, its name and its runners in order. */
export interface Question {
  readonly type: MarketType;
  readonly name: string;
  readonly rids: readonly number[];
}

/** Half-width of a log-strength step; in play trades far more nervously. */
const STEP = { inPlay: 0.03, preMatch: 0.01 };
/** Pull back towards the opening values, so a long demo never drifts to 1.01 v 1000. */
const REVERSION = 0.005;
/** A soccer match's expected goals open between these, and move a tenth as much as strengths. */
const GOALS = { min: 2.1, max: 3.1, step: 0.1 };
/** A T20 match ends level on runs this often, drawn once per fixture. */
const TIE = { min: 0.015, max: 0.035 };
/** Goals counted per side when summing the score grid; past it a soccer side's chance is nil. */
const MAX_GOALS = 12;

interface Drifting {
  now: number;
  readonly base: number;
}

export class FixtureModel {
  /** Each runner's log weight, shared by every market that names it. */
  private readonly strength = new Map<number, Drifting>();
  /** Soccer: log of the goals both sides are expected to score. */
  private readonly goals: Drifting;
  private readonly tie: number;
  /** Counts the moves, so a book knows whether its quote is older than the model. */
  version = 0;

  constructor(private readonly random: () => number) {
    const g = Math.log(GOALS.min + random() * (GOALS.max - GOALS.min));
    this.goals = { now: g, base: g };
    this.tie = TIE.min + random() * (TIE.max - TIE.min);
  }

  /** One step of every value the fixture's prices come from. */
  move(inPlay: boolean): void {
    const width = inPlay ? STEP.inPlay : STEP.preMatch;
    for (const s of this.strength.values()) this.drift(s, width);
    this.drift(this.goals, width * GOALS.step);
    this.version++;
  }

  /**
   * The fair chance of each runner of the question, in its order: summing to 1, but to the
   * number of places on a place market.
   */
  fair(q: Question): number[] {
    const rids = q.rids;
    if (q.type === 'tied-match' || q.type === 'completed-match') {
      const yes = q.type === 'tied-match' ? this.tie : 1 - this.tie;
      return rids.map((rid) => (rid === YES.rid ? yes : rid === NO.rid ? 1 - yes : 0));
    }
    if (q.type === 'goals') {
      // Runners: Over, then Under.
      const over = 1 - poissonAtMost(Math.floor(lineOf(q.name)), Math.exp(this.goals.now));
      return [over, 1 - over];
    }
    if (rids.includes(DRAW.rid)) return this.soccer(rids);
    if (q.name === 'To Be Placed') return placeChances(this.win(rids), placesFor(rids.length));
    const win = this.win(rids);
    return q.name === 'Set 1 Winner' && win.length === 2 ? [setChance(win[0]), 1 - setChance(win[0])] : win;
  }

  private win(rids: readonly number[]): number[] {
    const weights = rids.map((rid) => Math.exp(this.runner(rid).now));
    const total = weights.reduce((a, b) => a + b, 0);
    return weights.map((w) => w / total);
  }

  /** Home, away and the draw from each side's expected goals, the goals shared by strength. */
  private soccer(rids: readonly number[]): number[] {
    const sides = rids.filter((rid) => rid !== DRAW.rid);
    const [home, away] = this.win(sides).map((share) => share * Math.exp(this.goals.now));
    let [h, a, d] = [0, 0, 0];
    for (let i = 0; i <= MAX_GOALS; i++) {
      for (let j = 0; j <= MAX_GOALS; j++) {
        const p = poisson(i, home) * poisson(j, away);
        if (i > j) h += p;
        else if (j > i) a += p;
        else d += p;
      }
    }
    const sum = h + a + d;
    return rids.map((rid) => (rid === DRAW.rid ? d : rid === sides[0] ? h : a) / sum);
  }

  private runner(rid: number): Drifting {
    let s = this.strength.get(rid);
    if (!s) {
      const base = Math.log(0.3 + this.random());
      s = { now: base, base };
      this.strength.set(rid, s);
    }
    return s;
  }

  private drift(d: Drifting, width: number): void {
    d.now += REVERSION * (d.base - d.now) + (2 * this.random() - 1) * width;
  }
}

/** The goal line a market's name carries ("Over/Under 2.5 Goals"). */
const lineOf = (na: string): number => Number(/([\d.]+) Goals/.exec(na)?.[1] ?? 2.5);

/** Places paid in a race: two up to seven runners, three from eight. */
export const placesFor = (runners: number): number => (runners >= 8 ? 3 : 2);

function poisson(k: number, mean: number): number {
  let p = Math.exp(-mean);
  for (let i = 1; i <= k; i++) p *= mean / i;
  return p;
}

function poissonAtMost(k: number, mean: number): number {
  let sum = 0;
  for (let i = 0; i <= k; i++) sum += poisson(i, mean);
  return sum;
}

/** The chance of winning a set that makes `match` the chance of winning best of three: q²(3 − 2q) = match. */
function setChance(match: number): number {
  let [lo, hi] = [0, 1];
  for (let i = 0; i < 40; i++) {
    const q = (lo + hi) / 2;
    if (q * q * (3 - 2 * q) < match) lo = q;
    else hi = q;
  }
  return (lo + hi) / 2;
}

/**
 * Each runner's chance of finishing in the first `places` (Harville: the rest of the field
 * finishes in the order of their win chances among those left).
 */
function placeChances(win: readonly number[], places: number): number[] {
  const out = win.map(() => 0);
  const walk = (left: number, taken: readonly number[], chance: number) => {
    for (let i = 0; i < win.length; i++) {
      if (taken.includes(i)) continue;
      const p = (chance * win[i]) / left;
      out[i] += p;
      if (taken.length + 1 < places) walk(left - win[i], [...taken, i], p);
    }
  };
  walk(1, [], 1);
  return out;
}
