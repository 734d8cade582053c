/**
 * A job that must run to completion again whenever asked, one run at a time: asked while it runs,
 * it runs once more after, however many times it was asked; a run that says it is not done runs
 * again at once; stopped, it runs no more.
 */
import t from 'tap';
import { Repeater } from '../../src/lib/repeat.js';
import { seeded, seedOf } from '../../src/lib/random.js';

t.test('asked while running: one more run after, not one per ask; never two at once', async (t) => {
  let runs = 0;
  let running = 0;
  let most = 0;
  let release!: () => void;
  const repeater = new Repeater(async () => {
    runs++;
    most = Math.max(most, ++running);
    if (runs === 1) await new Promise<void>((ok) => (release = ok));
    running--;
    return true;
  }, () => t.fail('no run failed'));
  const first = repeater.request();
  for (let i = 0; i < 5; i++) void repeater.request();
  release();
  await first;
  t.equal(runs, 2, 'five asks during the first run: one more run');
  t.equal(most, 1);
});

t.test('a run that is not done runs again; stopped, it runs no more', async (t) => {
  let runs = 0;
  const repeater = new Repeater(async () => ++runs >= 3, () => undefined);
  await repeater.request();
  t.equal(runs, 3, 'until a run completes');
  repeater.stop();
  await repeater.request();
  t.equal(runs, 3, 'stopped');
});

t.test('seeded randomness repeats its sequence, in [0, 1); a seed from text is stable', async (t) => {
  const a = seeded(7);
  const b = seeded(7);
  const xs = Array.from({ length: 1000 }, () => a());
  t.same(Array.from({ length: 1000 }, () => b()), xs, 'the same seed, the same sequence');
  t.ok(xs.every((x) => x >= 0 && x < 1));
  t.not(seeded(8)(), xs[0], 'another seed, another sequence');
  t.equal(seedOf('1.200001001'), seedOf('1.200001001'));
  t.not(seedOf('a'), seedOf('b'));
});
