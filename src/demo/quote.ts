import type { PriceSize, RunnerOdds } from '../odds/messages.js';
import { tickDown, tickUp } from './ticks.js';

/** A line's one book still needs a runner ID on the wire; 1 is the simulator's convention. */
export const LINE_RID = 1;
/** Half-width of each runner's log-strength step; in play trades far more nervously. */
const STEP = { inPlay: 0.03, preMatch: 0.01 };
/** Pull back towards the opening strengths, so a long demo never drifts to 1.01 v 1000. */
const REVERSION = 0.005;
/** Fair prices stay inside this, which leaves room for three back and lay levels. */
const FAIR_MIN = 1.1;
const FAIR_MAX = 500;
const LEVELS = 3;

/** What a market's quotes move from one to the next: runners' strengths and traded volume, or a line. */
export interface Prices {
  rids: number[];
  /** Log weights of the runners; their softmax is the fair probability (sums to 100%). */
  strength: number[];
  base: number[];
  /** No line of a line market, and where it opened. */
  line: number;
  baseLine: number;
  /** Volume traded per runner so far; only ever grows. */
  tv: number[];
}

/**
 * The simulator's prices: runners' ladders from drifting strengths with what
 * last traded and how much, one line for the fancy markets, exchange tick
 * sizes and plausible stakes, all from one random source so a seeded run repeats.
 */
export class Quoter {
  constructor(private readonly random: () => number) {}

  runners(inPlay: boolean, book: Prices): RunnerOdds[] {
    const width = inPlay ? STEP.inPlay : STEP.preMatch;
    let total = 0;
    for (let i = 0; i < book.strength.length; i++) {
      const s = book.strength[i];
      book.strength[i] = s + REVERSION * (book.base[i] - s) + (2 * this.random() - 1) * width;
      total += Math.exp(book.strength[i]);
    }
    return book.rids.map((rid, i) => {
      const fair = Math.min(FAIR_MAX, Math.max(FAIR_MIN, total / Math.exp(book.strength[i])));
      // Best back just under fair and best lay at or over it: the back book carries the overround.
      const back = tickDown(fair);
      const lay = tickUp(back, this.chance(0.7) ? 1 : this.int(2, 3));
      // Since the last quote a stake was matched at one of the best prices.
      book.tv[i] = Math.round((book.tv[i] + this.size()) * 100) / 100;
      const ltp = this.chance(0.5) ? back : lay;
      return { rid, st: 'ACTIVE', b: this.levels(back, tickDown), l: this.levels(lay, tickUp), ltp, tv: book.tv[i] };
    });
  }

  /** Best price first, each further level one or two ticks worse. */
  private levels(best: number, worse: (price: number, n: number) => number): PriceSize[] {
    const out: PriceSize[] = [[best, this.size()]];
    while (out.length < LEVELS) out.push([worse(out[out.length - 1][0], this.int(1, 2)), this.size()]);
    return out;
  }

  /** No at the line, Yes a run above at even rates, or both at the line with a 90/110 split. */
  line(book: Prices, afterBall: boolean): RunnerOdds {
    // A ball has just been bowled, so the line always moves; otherwise it may hold.
    const delta = afterBall ? (this.chance(0.3) ? -1 : this.int(1, 2)) : this.int(-1, 1);
    const drift = Math.max(2, Math.round(book.baseLine / 5));
    let moved = book.line + delta;
    // Turn back at zero runs or at the edge of the drift band rather than stand still.
    if (moved < 0 || Math.abs(moved - book.baseLine) > drift) moved = book.line - delta;
    book.line = Math.max(0, moved);
    const split = this.chance(0.3);
    return {
      rid: LINE_RID, st: 'ACTIVE',
      b: [[split ? book.line : book.line + 1, split ? 90 : 100]],
      l: [[book.line, split ? 110 : 100]],
    };
  }

  /** Mostly small stakes with the odd large one, 5.00 to 2500.00. */
  private size(): number {
    const r = this.random();
    return Math.round(500 + r * r * 249500) / 100;
  }

  chance(p: number): boolean {
    return this.random() < p;
  }

  int(lo: number, hi: number): number {
    return lo + Math.floor(this.random() * (hi - lo + 1));
  }
}
