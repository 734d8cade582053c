import type { PriceSize } from '../odds/messages.js';
import type { LevelPriceVol, MarketChange, PriceVol, RunnerChange } from './stream.js';

/**
 * One market's book as the exchange holds it, at full depth, built from stream changes:
 * `atb`/`atl`/`trd` by price (size 0 removes the price), `batb`/`batl`/`bdatb`/`bdatl` by position
 * (size 0 removes the position), `ltp` and `tv` replaced, `img` starting the market afresh.
 *
 * A stream carries whichever ladders its subscription asked for. The book publishes one kind,
 * the richest the market's stream has carried so far: full depth (`atb`/`atl`), else best offers
 * (`batb`/`batl`), else best offers with virtual bets (`bdatb`/`bdatl`).
 */
const PUBLISHED = [['atb', 'atl'], ['batb', 'batl'], ['bdatb', 'bdatl']] as const;
type ByPrice = 'atb' | 'atl';
type ByPosition = 'batb' | 'batl' | 'bdatb' | 'bdatl';

class RunnerBook {
  readonly atb = new Map<number, number>();
  readonly atl = new Map<number, number>();
  readonly batb = new Map<number, PriceSize>();
  readonly batl = new Map<number, PriceSize>();
  readonly bdatb = new Map<number, PriceSize>();
  readonly bdatl = new Map<number, PriceSize>();
  readonly trd = new Map<number, number>();
  lastTraded: number | undefined;
  /** The runner's traded volume as the stream last gave it. */
  tradedVolume: number | undefined;
}

function byPrice(into: Map<number, number>, levels: PriceVol[]): void {
  for (const [price, size] of levels) {
    if (size === 0) into.delete(price);
    else into.set(price, size);
  }
}

function byPosition(into: Map<number, PriceSize>, levels: LevelPriceVol[]): void {
  for (const [position, price, size] of levels) {
    if (size === 0) into.delete(position);
    else into.set(position, [price, size]);
  }
}

export class ExchangeBook {
  private runners = new Map<number, RunnerBook>();
  /** Index into PUBLISHED of the richest ladder kind seen; PUBLISHED.length while none. */
  private kind: number = PUBLISHED.length;
  /** The market's traded volume as the stream last gave it. */
  private marketVolume: number | undefined;

  /** @param fresh the change replaces everything held (`img: true`, or a change of a SUB_IMAGE). */
  apply(change: MarketChange, fresh = change.img === true): void {
    if (fresh) {
      this.runners.clear();
      this.marketVolume = undefined;
      this.kind = PUBLISHED.length;
    }
    if (change.tv !== undefined) this.marketVolume = change.tv;
    for (const rc of change.rc ?? []) this.applyRunner(rc);
  }

  private applyRunner(rc: RunnerChange): void {
    let book = this.runners.get(rc.id);
    if (!book) this.runners.set(rc.id, (book = new RunnerBook()));
    for (const [i, [back, lay]] of PUBLISHED.entries()) {
      if (!rc[back] && !rc[lay]) continue;
      this.kind = Math.min(this.kind, i);
      if (i === 0) {
        byPrice(book.atb, rc.atb ?? []);
        byPrice(book.atl, rc.atl ?? []);
      } else {
        byPosition(book[back as ByPosition], (rc[back] as LevelPriceVol[] | undefined) ?? []);
        byPosition(book[lay as ByPosition], (rc[lay] as LevelPriceVol[] | undefined) ?? []);
      }
    }
    if (rc.trd) byPrice(book.trd, rc.trd);
    if (rc.ltp !== undefined) book.lastTraded = rc.ltp;
    if (rc.tv !== undefined) book.tradedVolume = rc.tv;
  }

  /**
   * The best `depth` levels to back, best (highest) first; with `lines` (a market priced as one
   * line, its back side the Yes lines), the lowest Yes line first.
   */
  back(rid: number, depth: number, lines = false): PriceSize[] {
    return this.side(rid, 0, depth, lines);
  }

  /** The best `depth` levels to lay, best (lowest) first; with `lines` (the No lines), the highest first. */
  lay(rid: number, depth: number, lines = false): PriceSize[] {
    return this.side(rid, 1, depth, lines);
  }

  private side(rid: number, side: 0 | 1, depth: number, lines: boolean): PriceSize[] {
    const book = this.runners.get(rid);
    if (!book || this.kind === PUBLISHED.length) return [];
    const key = PUBLISHED[this.kind][side];
    if (this.kind === 0) {
      const levels = [...book[key as ByPrice]];
      levels.sort((side === 0) !== lines ? (a, b) => b[0] - a[0] : (a, b) => a[0] - b[0]);
      return levels.slice(0, depth);
    }
    return [...book[key as ByPosition]].sort((a, b) => a[0] - b[0]).slice(0, depth).map(([, level]) => [...level] as PriceSize);
  }

  lastTraded(rid: number): number | undefined {
    return this.runners.get(rid)?.lastTraded;
  }

  /** The runner's traded volume: as the stream gave it, else the sum of its traded volume by price. */
  tradedVolume(rid: number): number | undefined {
    const book = this.runners.get(rid);
    if (!book) return undefined;
    if (book.tradedVolume !== undefined) return book.tradedVolume;
    return book.trd.size ? round([...book.trd.values()].reduce((a, b) => a + b, 0)) : undefined;
  }

  /** The market's traded volume: as the stream gave it, else the sum over its runners. */
  marketTradedVolume(): number | undefined {
    if (this.marketVolume !== undefined) return this.marketVolume;
    let sum: number | undefined;
    for (const rid of this.runners.keys()) {
      const volume = this.tradedVolume(rid);
      if (volume !== undefined) sum = (sum ?? 0) + volume;
    }
    return sum === undefined ? undefined : round(sum);
  }
}

/** Sums of two-decimal amounts, kept to cents so 0.1 + 0.2 reads 0.3. */
const round = (n: number): number => Math.round(n * 100) / 100;
