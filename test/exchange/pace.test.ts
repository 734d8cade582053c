/**
 * The replay's pace over a clock the test moves: at a speed N a message is due when its `pt` comes
 * due on a clock running N times real time from the first message; one already late waits for
 * nothing; with files replayed in turn, a `pt` earlier than the one before restarts the clock.
 */
import t from 'tap';
import { Pace } from '../../src/exchange/replay.js';
import { FakeClock } from '../helpers/clock.js';

t.test('at 8 times: each message waits until its pt, divided by 8, has passed since the first', async (t) => {
  const clock = new FakeClock();
  const pace = new Pace(8, false, clock);
  t.equal(pace.wait(1_000_000), 0, 'the first message starts the clock');
  t.equal(pace.wait(1_000_800), 100, '800 ms of recording later: 100 ms');
  clock.advance(100);
  t.equal(pace.wait(1_001_600), 100, 'counted from the first, not from the last wait');
  clock.advance(250);
  t.equal(pace.wait(1_002_400), 0, 'a message already late goes at once');
  t.equal(pace.wait(1_004_000), 150, 'and the ones after keep to the clock, not to the lateness');
});

t.test('a pt earlier than the one before: the clock goes on by time order, restarts by file order', async (t) => {
  const clock = new FakeClock();
  const byTime = new Pace(2, false, clock);
  byTime.wait(10_000);
  clock.advance(1000);
  t.equal(byTime.wait(9_000), 0, 'by time, an earlier pt is late: at once');
  t.equal(byTime.wait(14_000), 1000, 'and the clock is still the first message\'s');
  const byFile = new Pace(2, true, clock);
  byFile.wait(10_000);
  clock.advance(1000);
  t.equal(byFile.wait(9_000), 0, 'by file, the next file\'s first message starts the clock again');
  t.equal(byFile.wait(11_000), 1000, 'from its own pt');
});
