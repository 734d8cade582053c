import type { RunnerPrices } from '../odds/image.js';
import type { PriceSize } from '../odds/messages.js';
import type { MarketType } from '../refdata/types.js';
import { isOnLadder, snap, tickDown, tickUp } from './ticks.js';

/** A line's one book still needs a runner ID on the wire; 1 is the simulator's convention. */
export const LINE_RID = 1;
/** Levels a side, where the ladder has room for them. */
const LEVELS = 3;
/** Chances are priced no longer than 900, so the lay side keeps a tick of the ladder above. */
const MIN_CHANCE = 1 / 900;
/** Nor shorter than this: an outcome all but decided (a goal line passed) keeps a book an exchange shows. */
const MAX_CHANCE = 1 - 1 / 60;

/**
 * Each chance within [MIN_CHANCE, MAX_CHANCE], what capping the likeliest took given to the
 * others by their share, so the chances still add up to what they did (1, or the places paid).
 */
function bounded(fair: readonly number[], removed: (i: number) => boolean): number[] {
  const out = fair.map((c, i) => (removed(i) ? 0 : Math.min(MAX_CHANCE, Math.max(c, MIN_CHANCE))));
  const deficit = fair.reduce((a, b) => a + b, 0) - out.reduce((a, b) => a + b, 0);
  const room = out.reduce((s, c) => s + (c < MAX_CHANCE ? c : 0), 0);
  return deficit > 0 && room > 0 ? out.map((c) => (c < MAX_CHANCE ? Math.min(MAX_CHANCE, c + (deficit * c) / room) : c)) : out;
}

/**
 * What a bookmaker keeps on top of the fair price: its back prices are shorter by this share,
 * so its back book sums to about 100% plus it. The exchange's own markets carry only the tick
 * rounding (their best back is the tick just under fair, their best lay at or over it).
 */
export const MARGIN: Partial<Record<MarketType, number>> = { bookmaker: 0.03, bookmaker2: 0.05 };

/** What a market's quotes move from one to the next: traded volume, or a line. */
export interface Prices {
  rids: number[];
  /** No line of a line market, and where it opened. */
  line: number;
  baseLine: number;
  /** Volume traded per runner so far; only ever grows. */
  tradedVolumes: number[];
}

/**
 * The simulator's prices: runners' ladders around the fair chances its fixture's model gives,
 * with what last traded and how much, one line for the fancy markets, exchange tick sizes and
 * plausible stakes, all from one random source so a seeded run repeats.
 */
export class Quoter {
  constructor(private readonly random: () => number) {}

  /**
   * Each runner's ladders around its fair chance (`fair[i]`), less the market's margin on the back
   * side; a removed runner (a non-runner) takes no bets: REMOVED, its ladders empty.
   */
  runners(book: Prices, fair: readonly number[], margin: number, removed?: ReadonlySet<number>): RunnerPrices[] {
    const chances = bounded(fair, (i) => removed?.has(book.rids[i]) === true);
    return book.rids.map((rid, i) => {
      if (removed?.has(rid)) return { runnerId: rid, status: 'REMOVED', back: [], lay: [] };
      const chance = chances[i];
      // Best back under fair (by the margin, then to the tick below); best lay at or over fair, so the lay book stays under 100%.
      const back = tickDown(1 / (chance * (1 + margin)));
      const atFair = isOnLadder(1 / chance) ? snap(1 / chance) : tickUp(1 / chance);
      const lay = Math.max(atFair, tickUp(back, this.chance(0.7) ? 1 : this.int(2, 3)));
      // Since the last quote a stake was matched at one of the best prices.
      book.tradedVolumes[i] = Math.round((book.tradedVolumes[i] + this.size()) * 100) / 100;
      const lastTraded = this.chance(0.5) ? back : lay;
      return { runnerId: rid, status: 'ACTIVE', back: this.levels(back, tickDown), lay: this.levels(lay, tickUp), lastTraded, tradedVolume: book.tradedVolumes[i] };
    });
  }

  /** Best price first, each further level one or two ticks worse, as far as the ladder goes (1.01 to 1000). */
  private levels(best: number, worse: (price: number, n: number) => number): PriceSize[] {
    const out: PriceSize[] = [[best, this.size()]];
    for (let price = worse(best, this.int(1, 2)); out.length < LEVELS && price !== out[out.length - 1][0]; price = worse(price, this.int(1, 2))) {
      out.push([price, this.size()]);
    }
    return out;
  }

  /** No at the line, Yes a run above at even rates, or both at the line with a 90/110 split. */
  line(book: Prices, afterBall: boolean): RunnerPrices {
    // A ball has just been bowled, so the line always moves; otherwise it may hold.
    const delta = afterBall ? (this.chance(0.3) ? -1 : this.int(1, 2)) : this.int(-1, 1);
    const drift = Math.max(2, Math.round(book.baseLine / 5));
    let moved = book.line + delta;
    // Turn back at zero runs or at the edge of the drift band rather than stand still.
    if (moved < 0 || Math.abs(moved - book.baseLine) > drift) moved = book.line - delta;
    book.line = Math.max(0, moved);
    const split = this.chance(0.3);
    return {
      runnerId: LINE_RID, status: 'ACTIVE',
      back: [[split ? book.line : book.line + 1, split ? 90 : 100]],
      lay: [[book.line, split ? 110 : 100]],
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
