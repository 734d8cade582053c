import t from 'tap';
import { LADDER, isOnLadder, snap, tickDown, tickUp } from '../../src/demo/ticks.js';

/** [one tick below, band boundary, one tick above] for every boundary, then the top clamp. */
const BOUNDARIES: Array<[number, number, number]> = [
  [1.99, 2, 2.02], [2.98, 3, 3.05], [3.95, 4, 4.1], [5.9, 6, 6.2], [9.8, 10, 10.5],
  [19.5, 20, 21], [29, 30, 32], [48, 50, 55], [95, 100, 110], [990, 1000, 1000],
];

t.test('the ladder holds 350 exact 2 dp prices from 1.01 to 1000, ascending', async (t) => {
  t.equal(LADDER.length, 350);
  t.equal(LADDER[0], 1.01);
  t.equal(LADDER[LADDER.length - 1], 1000);
  t.ok(LADDER.every((p, i) => i === 0 || p > LADDER[i - 1]), 'ascending');
  t.ok(LADDER.every((p) => p === Math.round(p * 100) / 100), 'no float artefacts');
});

t.test('tickUp crosses every band boundary with the right tick', async (t) => {
  for (const [below, at, above] of BOUNDARIES) {
    t.equal(tickUp(below), at, `tickUp(${below})`);
    t.equal(tickUp(at), above, `tickUp(${at})`);
  }
});

t.test('tickDown crosses every band boundary with the right tick', async (t) => {
  for (const [below, at, above] of BOUNDARIES.slice(0, -1)) {
    t.equal(tickDown(above), at, `tickDown(${above})`);
    t.equal(tickDown(at), below, `tickDown(${at})`);
  }
});

t.test('n ticks step across a boundary one valid price at a time', async (t) => {
  t.equal(tickUp(1.98, 3), 2.02);
  t.equal(tickDown(2.04, 3), 1.99);
  t.equal(tickUp(3.9, 4), 4.2);
  t.equal(tickUp(2, -1), 1.99, 'negative n goes the other way');
  t.equal(tickDown(2.01, 0), 2, 'zero snaps');
});

t.test('walking the whole ladder up and back down gives exact ladder prices', async (t) => {
  const up = [LADDER[0]];
  while (up.length < LADDER.length) up.push(tickUp(up[up.length - 1]));
  t.strictSame(up, LADDER);
  const down = [LADDER[LADDER.length - 1]];
  while (down.length < LADDER.length) down.push(tickDown(down[down.length - 1]));
  t.strictSame(down, [...LADDER].reverse());
});

t.test('ticks clamp at 1.01 and 1000', async (t) => {
  t.equal(tickUp(1000), 1000);
  t.equal(tickUp(990, 5), 1000);
  t.equal(tickUp(5000), 1000);
  t.equal(tickDown(1.01), 1.01);
  t.equal(tickDown(1.02, 5), 1.01);
  t.equal(tickDown(1), 1.01);
});

t.test('off-ladder and float-noisy prices tick to their neighbours', async (t) => {
  t.equal(tickUp(2.01), 2.02);
  t.equal(tickDown(2.01), 2);
  t.equal(tickUp(2 + 1e-12), 2.02, 'a hair over 2 still counts as 2');
  t.equal(tickDown(2 - 1e-12), 1.99, 'a hair under 2 still counts as 2');
  t.equal(tickUp(1.1 * 1.1), 1.22, '1.2100000000000002 is 1.21');
  t.ok(isOnLadder(1.1 * 1.1));
});

t.test('isOnLadder accepts valid prices only', async (t) => {
  for (const p of [1.01, 1.5, 2.02, 3.05, 4.1, 6.2, 10.5, 21, 32, 55, 110, 1000]) t.ok(isOnLadder(p), `${p}`);
  for (const p of [1, 1.005, 2.01, 3.02, 4.05, 6.1, 10.2, 21.5, 31, 52, 105, 1001, NaN, Infinity]) {
    t.notOk(isOnLadder(p), `${p}`);
  }
});

t.test('snap returns the nearest valid price, halfway down, clamped', async (t) => {
  t.equal(snap(1.234), 1.23);
  t.equal(snap(2.013), 2.02);
  t.equal(snap(2.009), 2);
  t.equal(snap(2.01), 2, 'halfway snaps down');
  t.equal(snap(3.02), 3);
  t.equal(snap(3.03), 3.05);
  t.equal(snap(1 / 0.3), 3.35);
  t.equal(snap(0.5), 1.01);
  t.equal(snap(5000), 1000);
  t.equal(snap(4.1), 4.1);
});

t.test('non-finite prices are refused', async (t) => {
  t.throws(() => tickUp(NaN), RangeError);
  t.throws(() => tickDown(Infinity), RangeError);
  t.throws(() => snap(NaN), RangeError);
});
