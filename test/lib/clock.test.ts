/**
 * The one Clock every limit and timer reads, and the FakeClock every test of time moves: the
 * system's runs each timer and stops it; the fake runs what falls due in order, each at its own
 * time, ties in the order set, a repeating timer a period after it last ran, and what a stall made
 * late at the next move, late, as a blocked event loop would.
 */
import t from 'tap';
import { systemClock } from '../../src/lib/clock.js';
import { FakeClock } from '../helpers/clock.js';

t.test('the system\'s clock: a one-off runs, a stopped one never does; a repeating one runs until stopped', async (t) => {
  // Its timers never keep a stopping process alive: this keeps the test's alive while it waits for them.
  const alive = setInterval(() => undefined, 60_000);
  t.teardown(() => clearInterval(alive));
  const ran: string[] = [];
  const stopped = systemClock.after(1, () => ran.push('stopped'));
  stopped.stop();
  await new Promise<void>((ok) => systemClock.after(5, () => (ran.push('after'), ok())));
  let ticks = 0;
  await new Promise<void>((ok) => {
    const ticker = systemClock.every(1, () => {
      if (++ticks < 3) return;
      ticker.stop();
      ok();
    });
  });
  t.same(ran, ['after'], 'the stopped one never ran');
  t.equal(ticks, 3);
  t.ok(Math.abs(systemClock.now() - Date.now()) < 1000, 'the time of day');
});

t.test('the fake: what falls due runs in order at its own time, ties in the order set', async (t) => {
  const clock = new FakeClock(0);
  const ran: string[] = [];
  clock.after(30, () => ran.push(`b@${clock.now()}`));
  clock.every(20, () => ran.push(`tick@${clock.now()}`));
  clock.after(30, () => ran.push(`c@${clock.now()}`));
  clock.after(10, () => ran.push(`a@${clock.now()}`));
  clock.advance(45);
  t.same(ran, ['a@10', 'tick@20', 'b@30', 'c@30', 'tick@40']);
  t.equal(clock.now(), 45);
  t.same(clock.periods(), [20]);
  t.equal(clock.pending(), 0);
});

t.test('a stall makes what fell due meanwhile run late, at the next move; a repeating timer goes on a period after', async (t) => {
  const clock = new FakeClock(0);
  const ran: number[] = [];
  const ticker = clock.every(50, () => ran.push(clock.now()));
  clock.advance(50);
  clock.stall(130);
  t.same(ran, [50], 'nothing runs during the stall');
  clock.advance(0);
  t.same(ran, [50, 180], 'the tick due at 100 ran late, once, at 180');
  clock.advance(50);
  t.same(ran, [50, 180, 230], 'and the next a period after it ran');
  ticker.stop();
  clock.advance(1000);
  t.equal(ran.length, 3, 'stopped');
});
