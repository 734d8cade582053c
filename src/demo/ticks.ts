/**
 * The exchange price ladder (Betfair tick sizes). Every price is built from whole hundredths
 * and rounded to 2 dp once, so callers compare and print exact decimals, never 1.0300000001.
 */

/** [band start, band end, tick] in hundredths, so the ladder is generated in exact integers. */
const BANDS: ReadonlyArray<readonly [number, number, number]> = [
  [101, 200, 1], [200, 300, 2], [300, 400, 5], [400, 600, 10], [600, 1000, 20],
  [1000, 2000, 50], [2000, 3000, 100], [3000, 5000, 200], [5000, 10000, 500], [10000, 100000, 1000],
];

function buildLadder(): number[] {
  const prices: number[] = [];
  for (const [from, to, step] of BANDS) {
    for (let c = from; c < to; c += step) prices.push(c / 100);
  }
  prices.push(BANDS[BANDS.length - 1][1] / 100);
  return prices;
}

/** All 350 valid prices, ascending, from 1.01 to 1000. */
export const LADDER: readonly number[] = buildLadder();

// Prices that arrive through float arithmetic (1/p, 0.1 + 0.2) count as equal within this.
const EPS = 1e-9;

function finite(price: number): number {
  if (!Number.isFinite(price)) throw new RangeError(`not a price: ${price}`);
  return price;
}

/** Index of the first ladder price above `price` (LADDER.length when there is none). */
function firstAbove(price: number): number {
  let lo = 0;
  let hi = LADDER.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (LADDER[mid] > price + EPS) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Index of the last ladder price below `price` (-1 when there is none). */
function lastBelow(price: number): number {
  return firstAbove(price - 2 * EPS) - 1;
}

/** The n-th ladder price above `price` (n < 0 goes down, 0 snaps), clamped to 1.01..1000. */
export function tickUp(price: number, n = 1): number {
  if (n <= 0) return n === 0 ? snap(price) : tickDown(price, -n);
  return LADDER[Math.min(firstAbove(finite(price)) + n - 1, LADDER.length - 1)];
}

/** The n-th ladder price below `price` (n < 0 goes up, 0 snaps), clamped to 1.01..1000. */
export function tickDown(price: number, n = 1): number {
  if (n <= 0) return n === 0 ? snap(price) : tickUp(price, -n);
  return LADDER[Math.max(lastBelow(finite(price)) - n + 1, 0)];
}

export function isOnLadder(price: number): boolean {
  if (!Number.isFinite(price)) return false;
  const i = firstAbove(price) - 1;
  return i >= 0 && Math.abs(LADDER[i] - price) <= EPS;
}

/** The nearest ladder price, clamped to 1.01..1000; a price halfway between two snaps down. */
export function snap(price: number): number {
  const above = firstAbove(finite(price));
  if (above === 0) return LADDER[0];
  const below = LADDER[above - 1];
  if (above === LADDER.length || price - below <= LADDER[above] - price + EPS) return below;
  return LADDER[above];
}
