/**
 * One price model per fixture, from which every market of it is priced: so an outcome has one
 * probability wherever it trades (match odds, the bookmakers, the super over), complementary
 * questions add up (tied and completed, each over/under line from one goals expectation, a
 * tennis match and its first set, a race's place market and its win market), and the whole
 * fixture moves together. Prices move with the match: a goal (the score, and the goals left to
 * come as the match goes on) or a wicket moves every market of the fixture at once; between
 * events they only drift a little.
 */
import type { SuspensionReason } from '../odds/messages.js';
import type { MarketType } from '../refdata/types.js';
import { DRAW, NO, YES } from './markets.js';

/** What one market asks, as the model needs it: its type, its name and its runners in order. */
export interface Question {
  readonly type: MarketType;
  readonly name: string;
  readonly rids: readonly number[];
}

/** Half-width of a log-strength step between events: small, so no price swings without one. */
const STEP = { inPlay: 0.004, preMatch: 0.002 };
/** Share of the match one in-play tick plays, and how far it goes (a featured match never ends). */
const PROGRESS = { step: 1 / 4800, most: 0.85 };
/** Chances per in-play tick: a goal early in a soccer match (fewer as it goes on), a wicket, a ball bowled. */
const CHANCE = { goal: 1 / 600, wicket: 1 / 500, ball: 1 / 8 };
/** What a wicket costs the batting side's log strength, and the wickets an innings has. */
const WICKET_COST = 0.12;
const WICKETS = 10;
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
  base: number;
}

/** Something that happened in the match, which suspends its markets (only the ball markets, for a ball) while it is dealt with. */
export interface MatchEvent {
  readonly reason: SuspensionReason;
  /** Only the markets priced ball by ball (sessions, ball-by-ball) pause. */
  readonly balls: boolean;
}

/** The sports whose matches have events: soccer (goals) and cricket (wickets, balls). */
const SOCCER = 1;
const CRICKET = 4;

export class FixtureModel {
  /** Each runner's log weight, shared by every market that names it. */
  private readonly strength = new Map<number, Drifting>();
  /** Soccer: log of the goals both sides are expected to score. */
  private readonly goals: Drifting;
  private readonly tie: number;
  /** Soccer: the goals each side has scored, and the last goal (a VAR check may rule it out). */
  readonly score: [number, number] = [0, 0];
  private lastGoal: 0 | 1 | undefined;
  /** Soccer: the two sides of its match odds, once priced. */
  private sides: readonly number[] | undefined;
  /** Share of the match played (soccer: the goals still to come are the rest's). */
  private progress = 0;
  /** Cricket: the side batting, the first of its match odds, and the wickets it lost. */
  private batting: number | undefined;
  private wickets = 0;
  /** Counts the moves, so a book knows whether its quote is older than the model. */
  version = 0;

  constructor(private readonly random: () => number, private readonly sport?: number) {
    const g = Math.log(GOALS.min + random() * (GOALS.max - GOALS.min));
    this.goals = { now: g, base: g };
    this.tie = TIE.min + random() * (TIE.max - TIE.min);
  }

  /** One small step of every value the fixture's prices come from, and the match going on: between events, no swing. */
  move(inPlay: boolean): void {
    const width = inPlay ? STEP.inPlay : STEP.preMatch;
    for (const s of this.strength.values()) this.drift(s, width);
    this.drift(this.goals, width * GOALS.step);
    if (inPlay) this.progress = Math.min(PROGRESS.most, this.progress + PROGRESS.step);
    this.version++;
  }

  /** What happens in the match this tick, if anything, the model already moved by it: a goal, a wicket, a ball. */
  event(inPlay: boolean): MatchEvent | undefined {
    if (!inPlay) return undefined;
    if (this.sport === SOCCER && this.random() < CHANCE.goal * (1 - this.progress)) return this.goal();
    if (this.sport !== CRICKET) return undefined;
    if (this.batting !== undefined && this.wickets < WICKETS && this.random() < CHANCE.wicket) {
      this.wickets++;
      this.runner(this.batting).now -= WICKET_COST;
      this.runner(this.batting).base -= WICKET_COST;
      this.version++;
      return { reason: 'wicket', balls: false };
    }
    return this.random() < CHANCE.ball ? { reason: 'ball running', balls: true } : undefined;
  }

  /** A VAR check rules the last goal out: the score as it was. */
  overturn(): void {
    if (this.lastGoal === undefined) return;
    this.score[this.lastGoal]--;
    this.lastGoal = undefined;
    this.version++;
  }

  /** A goal, to a side by its share of the expected goals. */
  private goal(): MatchEvent {
    const share = this.sides ? this.win(this.sides)[0] : 0.5;
    this.lastGoal = this.random() < share ? 0 : 1;
    this.score[this.lastGoal]++;
    this.version++;
    return { reason: 'goal', balls: false };
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
      // Runners: Over, then Under: the goals scored and those still to come.
      const needed = Math.floor(lineOf(q.name)) - this.score[0] - this.score[1];
      const over = needed < 0 ? 1 : 1 - poissonAtMost(needed, this.toCome());
      return [over, 1 - over];
    }
    if (this.sport === CRICKET && this.batting === undefined && q.type === 'match-odd' && rids.length === 2) this.batting = rids[0];
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

  /** The goals still to come: the match's expectation less the share played. */
  private toCome(): number {
    return Math.exp(this.goals.now) * (1 - this.progress);
  }

  /** Home, away and the draw from the score and each side's goals still to come, shared by strength. */
  private soccer(rids: readonly number[]): number[] {
    const sides = rids.filter((rid) => rid !== DRAW.rid);
    this.sides ??= sides;
    const [home, away] = this.win(sides).map((share) => share * this.toCome());
    const lead = this.score[0] - this.score[1];
    let [h, a, d] = [0, 0, 0];
    for (let i = 0; i <= MAX_GOALS; i++) {
      for (let j = 0; j <= MAX_GOALS; j++) {
        const p = poisson(i, home) * poisson(j, away);
        if (lead + i > j) h += p;
        else if (lead + i < j) a += p;
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
