import type { OddsImage } from '../odds/image.js';
import type { PriceSize } from '../odds/messages.js';
import { isLineType, type MarketType } from '../refdata/types.js';

/**
 * The prices a market can have, by how it is priced. Runner markets: decimal odds within the
 * exchange range, back prices falling and lay prices rising level by level, best back below best
 * lay, stakes within bounds. Line markets (the fancy types): run lines within bounds, Yes lines
 * rising and No lines falling, best Yes at or above best No, rates within bounds. Exchange tick
 * sizes are not required: publishers quote other books too.
 */
const PRICE = { min: 1.01, max: 1000 } as const;
/** A ladder level's stake on a runner market. */
const MAX_SIZE = 1e9;
/** A run line; far above any innings, and a line below 0 runs means nothing. */
const LINE = { min: 0, max: 10000 } as const;
/** A line market's rate: what 100 staked wins (100 is evens). */
const RATE = { min: 1, max: 1000 } as const;

interface Range { min: number; max: number; what: string }
/** A ladder side: what its levels are called and whether they must rise (1) or fall (-1) from the best. */
interface SideRule { name: string; step: 1 | -1 }
interface PriceRule {
  label: string;
  price: Range;
  size: Range;
  back: SideRule;
  lay: SideRule;
  /** Whether the best of each side leave no gap for a sure win. */
  apart(bestBack: number, bestLay: number): boolean;
  crossed: string;
}

const RULES: Record<'runner' | 'line', PriceRule> = {
  runner: {
    label: 'runner market rule',
    price: { ...PRICE, what: 'decimal odds' },
    size: { min: 0, max: MAX_SIZE, what: 'a stake' },
    back: { name: 'back', step: -1 },
    lay: { name: 'lay', step: 1 },
    apart: (b, l) => b < l,
    crossed: 'best back must be below best lay',
  },
  line: {
    label: 'line market rule',
    price: { ...LINE, what: 'a run line' },
    size: { ...RATE, what: 'a rate' },
    back: { name: 'Yes', step: 1 },
    lay: { name: 'No', step: -1 },
    apart: (b, l) => b >= l,
    crossed: 'best Yes line must be at or above best No line',
  },
};

const within = (v: number, r: Range, at: string, rule: PriceRule): string | undefined =>
  v >= r.min && v <= r.max ? undefined : `${at} ${v} must be ${r.what} from ${r.min} to ${r.max} (${rule.label})`;

function side(levels: PriceSize[], s: SideRule, at: string, rule: PriceRule): string | undefined {
  for (let i = 0; i < levels.length; i++) {
    const [price, size] = levels[i];
    const bad = within(price, rule.price, `${at}[${i}][0]`, rule) ?? within(size, rule.size, `${at}[${i}][1]`, rule);
    if (bad) return bad;
    const before = i > 0 ? levels[i - 1][0] : undefined;
    if (before !== undefined && Math.sign(price - before) !== s.step) {
      return `${at}[${i}][0] ${price} after ${before}: ${s.name} levels must ${s.step < 0 ? 'fall' : 'rise'} strictly from the best (${rule.label})`;
    }
  }
  return undefined;
}

export type Pricing = 'runner' | 'line';

/**
 * A fancy market with no runners of its own is priced as one line; every other market (a nested
 * one too, type null) by its runners' odds. A line type that lists runners (an exchange's
 * odd-or-even or line market, say) trades decimal odds on them like any runner market.
 */
export const pricingOf = (ty: MarketType | null, hasRunners: boolean): Pricing => (isLineType(ty) && !hasRunners ? 'line' : 'runner');

/** The first price of an image that its market cannot have, naming the field and the rule; undefined when all are possible. */
export function checkPrices(image: OddsImage, pricing: Pricing): string | undefined {
  const rule = RULES[pricing];
  for (let i = 0; i < image.runners.length; i++) {
    const { back, lay, lastTraded } = image.runners[i];
    // Refusals name the fields by the keys the publisher sent.
    const at = `r[${i}]`;
    const bad = side(back, rule.back, `${at}.b`, rule) ?? side(lay, rule.lay, `${at}.l`, rule) ?? (lastTraded === undefined ? undefined : within(lastTraded, rule.price, `${at}.ltp`, rule));
    if (bad) return bad;
    if (back.length && lay.length && !rule.apart(back[0][0], lay[0][0])) {
      return `${at} is crossed, ${rule.back.name} ${back[0][0]} against ${rule.lay.name} ${lay[0][0]}: ${rule.crossed} (${rule.label})`;
    }
  }
  return undefined;
}
