/**
 * The client's dead-peer check on a clock the test moves: two heartbeat intervals without a frame
 * and the peer is dead, told once with the silence; any frame moves the bound on; stopped, it
 * tells nothing. (Over a silent server's socket: client/liveness.test.ts.)
 */
import t from 'tap';
import { Silence } from '../../src/client/silence.js';
import { FakeClock } from '../helpers/clock.js';

function setup(hbMs = 1000) {
  const clock = new FakeClock();
  const dead: number[] = [];
  const silence = new Silence(hbMs, (ms) => dead.push(ms), clock);
  t.teardown(() => silence.stop());
  return { clock, dead, silence };
}

t.test('dead at two intervals of silence, not a millisecond before, told once', async (t) => {
  const { clock, dead, silence } = setup();
  silence.start();
  clock.advance(1999);
  t.same(dead, []);
  clock.advance(1);
  t.same(dead, [2000], 'the silence it saw');
  clock.advance(10_000);
  t.same(dead, [2000], 'once');
});

t.test('each frame moves the bound on: dead two intervals after the last', async (t) => {
  const { clock, dead, silence } = setup();
  silence.start();
  for (let i = 0; i < 10; i++) {
    clock.advance(1500);
    silence.heard();
  }
  t.same(dead, [], 'frames every 1.5 s at a 1 s heartbeat: alive');
  clock.advance(1999);
  t.same(dead, []);
  clock.advance(1);
  t.same(dead, [2000]);
});

t.test('stopped, it tells nothing', async (t) => {
  const { clock, dead, silence } = setup();
  silence.start();
  clock.advance(1000);
  silence.stop();
  clock.advance(10_000);
  t.same(dead, []);
  t.equal(clock.pending(), 0, 'no timer left');
});
