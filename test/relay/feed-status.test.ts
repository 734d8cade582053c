import t from 'tap';
import { FakeClock } from '../helpers/clock.js';
import { FeedMonitor } from '../../src/relay/feed-monitor.js';
import type { FeedStatus } from '../../src/odds/messages.js';

/**
 * The feed status over a clock the test moves: STALE after FEED_STALE_MS of
 * silence from every publisher or while the bus is down, OK again when both
 * are over, and each listener told once per change, never twice the same.
 */
function setup(staleMs = 1000) {
  const clock = new FakeClock(0);
  const monitor = new FeedMonitor({ staleMs, clock });
  const told: FeedStatus[] = [];
  monitor.listen({ feedChanged: (s) => told.push(s) });
  return { monitor, told, advance: (ms: number) => clock.advance(ms) };
}

t.test('silence past the bound makes the feed STALE; a publisher heard makes it OK', async (t) => {
  const { monitor, told, advance } = setup();
  t.equal(monitor.status, 'OK', 'a new pod starts OK: its publishers have the bound to be heard');
  advance(1000);
  monitor.evaluate();
  t.equal(monitor.status, 'OK', 'at the bound, not yet');
  advance(1);
  monitor.evaluate();
  monitor.evaluate();
  t.equal(monitor.status, 'STALE');
  monitor.heard();
  monitor.heard();
  t.same(told, ['STALE', 'OK'], 'each change told once');
});

t.test('its own timer looks for the silence: STALE at the first look past the bound, with nothing else calling', async (t) => {
  const clock = new FakeClock(0);
  const monitor = new FeedMonitor({ staleMs: 1000, checkMs: 250, clock });
  const told: FeedStatus[] = [];
  monitor.listen({ feedChanged: (s) => told.push(s) });
  monitor.start();
  t.teardown(() => monitor.stop());
  clock.advance(1000);
  t.same(told, [], 'at the bound, not yet');
  clock.advance(250);
  t.same(told, ['STALE'], 'the look at 1250 ms');
  monitor.stop();
  monitor.heard();
  monitor.busDown(true);
  clock.advance(5000);
  t.same(told, ['STALE', 'OK', 'STALE'], 'stopped, it looks no more: only what it is told changes it');
});

t.test('the bus down makes it STALE however recently a publisher was heard, until the bus is back', async (t) => {
  const { monitor, told, advance } = setup();
  monitor.busDown(true);
  monitor.heard();
  t.equal(monitor.status, 'STALE', 'a pod cut off from the others cannot vouch for their prices');
  monitor.busDown(false);
  t.equal(monitor.status, 'OK');
  monitor.busDown(true);
  advance(5000);
  monitor.busDown(false);
  t.equal(monitor.status, 'STALE', 'back, but silent past the bound meanwhile');
  t.same(told, ['STALE', 'OK', 'STALE']);
});
