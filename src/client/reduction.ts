import type { WireTerms } from '../odds/messages.js';

/**
 * Betfair's rule for a runner withdrawn before the off (its Exchange rules and help, and what
 * flumine's simulation applies): bets on the removed runner are void, and every bet matched on
 * another runner before the removal has its price reduced by the removed runner's reduction
 * (adjustment) factor, whether backed or laid. In a win market (one winner) the matched price is
 * reduced, and only by a factor of 2.5% or more:
 *
 *   reduced = price × (1 − factor / 100)           8.6 with 16.2%  → 7.21
 *
 * In a place market (several winners) the winnings are reduced, whatever the factor:
 *
 *   reduced = 1 + (price − 1) × (1 − factor / 100) 8.0 with 25%    → 6.25
 *
 * Each removal after the bet was matched reduces it again, in the order they came; a removal
 * before it was matched does not (the market had already re-formed). Each-way markets reduce
 * the win price as a win market does (the place terms then apply to it). Prices are rounded to
 * two decimals, never below 1.01.
 */

/** Reduction factors under this do not reduce matched prices in a win market. */
export const WIN_MINIMUM_FACTOR = 2.5;

export interface Reduced {
  /** The price the bet is now settled at (the matched price when nothing reduced it). */
  price: number;
  /** True when the bet's own runner was removed: the bet is void. */
  void: boolean;
  /** The removals that reduced it, in the order applied (`at` absent: removed at a time not given). */
  applied: { rid: number; factor: number; at?: number }[];
}

const round2 = (x: number): number => Math.round(x * 100) / 100;

/**
 * The price a bet matched at `price` on runner `rid` at `matchedAt` (ms) is settled at, by the
 * market's terms now (`nw` tells a place market, `ewd` an each-way one; each removed runner's
 * `af` and `rd`). A removed runner without a removal time counts as removed after the bet.
 */
export function reduce(terms: WireTerms, rid: number, price: number, matchedAt: number): Reduced {
  const removed = (terms.r ?? []).filter((r) => r.st === 'REMOVED');
  if (removed.some((r) => r.rid === rid)) return { price, void: true, applied: [] };
  const place = (terms.nw ?? 1) > 1 && terms.ewd === undefined;
  const applied: Reduced['applied'] = [];
  let reduced = price;
  const after = removed.filter((r) => r.af !== undefined && (r.rd ?? Infinity) > matchedAt).sort((a, b) => (a.rd ?? Infinity) - (b.rd ?? Infinity));
  for (const r of after) {
    const factor = r.af!;
    if (!place && factor < WIN_MINIMUM_FACTOR) continue;
    reduced = place ? 1 + (reduced - 1) * (1 - factor / 100) : reduced * (1 - factor / 100);
    applied.push(r.rd === undefined ? { rid: r.rid, factor } : { rid: r.rid, factor, at: r.rd });
  }
  return { price: applied.length ? Math.max(1.01, round2(reduced)) : price, void: false, applied };
}
