/**
 * The event loop's own delay, from its timer's drift, on a clock the test moves: a stall (the loop
 * blocked) shows as the timer running late, busy past the bound, eased at the next tick on time;
 * what waits on it waits only while it is busy.
 */
import t from 'tap';
import { LoopDelay } from '../../src/lib/loop-delay.js';
import { FakeClock } from '../helpers/clock.js';

function setup() {
  const clock = new FakeClock();
  const loop = new LoopDelay(100, clock, 50);
  loop.start();
  t.teardown(() => loop.stop());
  return { clock, loop };
}

t.test('a loop on time is not busy; a stall past the bound is, until a tick comes on time', async (t) => {
  const { clock, loop } = setup();
  clock.advance(500);
  t.equal(loop.ms, 0);
  t.notOk(loop.busy());
  // Blocked for 130 ms from its last tick: the tick due 50 ms after it runs 80 ms late.
  clock.stall(130);
  clock.advance(0);
  t.equal(loop.ms, 80, 'the tick ran 80 ms late');
  t.notOk(loop.busy(), 'within the bound');
  clock.stall(200);
  clock.advance(0);
  t.equal(loop.ms, 150);
  t.ok(loop.busy(), 'past the bound');
  clock.advance(50);
  t.notOk(loop.busy(), 'the next tick on time eases it');
});

t.test('eased() resolves at once when not busy, else at the first tick on time; stop() releases every waiter', async (t) => {
  const { clock, loop } = setup();
  let eased = false;
  await loop.eased();
  clock.stall(200);
  clock.advance(0);
  void loop.eased().then(() => (eased = true));
  await Promise.resolve();
  t.notOk(eased, 'held while busy');
  clock.advance(50);
  await Promise.resolve();
  t.ok(eased, 'released by the tick on time');
  clock.stall(200);
  clock.advance(0);
  let released = false;
  void loop.eased().then(() => (released = true));
  loop.stop();
  await Promise.resolve();
  t.ok(released, 'stopping releases what waits');
  t.same(clock.periods(), [], 'and its timer is gone');
});
