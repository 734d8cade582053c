import t from 'tap';
import { CLOSE } from '../../src/errors.js';
import { variant } from '../../src/hub/session.js';
import { rig } from './fakes.js';
import { waitFor } from '../helpers/wait.js';

/** The sweep's decisions, socket by socket, over fakes of uWS (fakes.ts). */
const LIMITS = { slowBytes: 1000, maxBytes: 100_000, slowCloseMs: 5000 };

t.test('a socket backed up without falling further behind is closed once it has stayed so past the limit', async (t) => {
  const { bc, sweeper, open, put, publish } = rig(LIMITS);
  const stuck = open();
  const reader = open();
  bc.attach(stuck.s, ['m'], variant('json'));
  bc.attach(reader.s, ['m'], variant('json'));
  publish(put('m', 2));
  // Between a quarter of the soft limit and the soft limit: never behind, never drained.
  stuck.conn.buffered = 600;
  sweeper.run(0);
  t.equal(stuck.s.lag, undefined, 'under the soft limit: still on its topics');
  publish(put('m', 2.1));
  sweeper.run(4000);
  t.equal(stuck.conn.closedWith, undefined, 'within the limit: kept');
  sweeper.run(5001);
  t.same(stuck.conn.closedWith, CLOSE.SLOW.code, 'past it: closed as a slow consumer');
  t.equal(reader.conn.closedWith, undefined, 'the reader is untouched');
  publish(put('m', 2.2));
  t.equal(reader.conn.messages().at(-1)?.op === 'odds' && (reader.conn.messages().at(-1) as { seq: number }).seq, 3, 'and still gets every frame');
});

t.test('a socket that drains below a quarter of the soft limit starts its clock again', async (t) => {
  const { bc, sweeper, open, put, publish } = rig(LIMITS);
  const a = open();
  bc.attach(a.s, ['m'], variant('json'));
  publish(put('m', 2));
  a.conn.buffered = 600;
  sweeper.run(0);
  a.conn.buffered = 100;
  publish(put('m', 2.1));
  sweeper.run(4000);
  a.conn.buffered = 600;
  publish(put('m', 2.2));
  sweeper.run(8000);
  t.equal(a.conn.closedWith, undefined, 'backed up twice for less than the limit each time');
  sweeper.run(13001);
  t.same(a.conn.closedWith, CLOSE.SLOW.code);
});

t.test('over the soft limit a socket falls behind alone, and over the hard one it is closed at once', async (t) => {
  const { bc, sweeper, open, put, publish } = rig(LIMITS);
  const slow = open();
  const huge = open();
  const reader = open();
  for (const x of [slow, huge, reader]) bc.attach(x.s, ['m'], variant('json'));
  publish(put('m', 2));
  slow.conn.buffered = 2000;
  huge.conn.buffered = 200_000;
  sweeper.run(0);
  t.ok(slow.s.lag, 'behind');
  t.same(huge.conn.closedWith, CLOSE.SLOW.code);
  const before = slow.conn.frames.length;
  publish(put('m', 2.1));
  t.equal(slow.conn.frames.length, before, 'skipped');
  t.equal(reader.conn.frames.length, 2, 'the reader got both');
  slow.conn.buffered = 0;
  sweeper.run(100);
  t.match(slow.conn.messages().at(-1), { op: 'odds', seq: 2, con: true }, 'drained: caught up with the newest image');
});

t.test('publishers are never slowed by sockets: with every socket backed up the fan-out is not busy', async (t) => {
  const { bc, sweeper, open, put, publish } = rig(LIMITS);
  const all = Array.from({ length: 10 }, () => open());
  for (const x of all) bc.attach(x.s, ['m'], variant('json'));
  publish(put('m', 2));
  for (const x of all) x.conn.buffered = 900;
  sweeper.run(0);
  t.equal(bc.busy(), false, 'what a publisher\'s ack waits on does not count sockets');
  let eased = false;
  bc.publish(put('m', 2.1));
  await bc.eased().then(() => (eased = true));
  t.ok(eased, 'a batch\'s wait ends with the loop turn that publishes it');
  t.equal('busy' in sweeper, false, 'the sweep offers publishers nothing to wait on');
});

t.test('heartbeats: after hb ms with no frame, direct or from a topic', async (t) => {
  const { bc, sweeper, open, put, publish } = rig(LIMITS);
  const now = Date.now();
  const a = open();
  bc.attach(a.s, ['m'], variant('json'));
  publish(put('m', 2, now + 3000));
  sweeper.run(now + 5100);
  t.equal(a.conn.messages().filter((m) => m.op === 'hb').length, 0, 'the frame of its market counts');
  sweeper.run(now + 8100);
  t.equal(a.conn.messages().filter((m) => m.op === 'hb').length, 1, 'silent for hb ms: one heartbeat');
});

t.test('a socket that falls behind while an image waits for the end of the loop turn gets that image when it catches up', async (t) => {
  const { bc, sweeper, open, put, publish } = rig(LIMITS);
  const slow = open();
  bc.attach(slow.s, ['m'], variant('json'));
  publish(put('m', 2));
  // Queued in this turn's batch, not yet on the topics, when the sweep finds the socket over its limit.
  bc.publish(put('m', 2.1));
  slow.conn.buffered = 2000;
  sweeper.run(0);
  t.ok(slow.s.lag, 'behind');
  bc.flush();
  slow.conn.buffered = 0;
  sweeper.run(100);
  const odds = slow.conn.messages().filter((m) => m.op === 'odds');
  t.match(odds.at(-1), { seq: 2 }, 'its screen ends on the newest image, not on the one before it');
});

t.test('a conflated socket that falls behind while its interval holds a market back gets the newest image when it catches up', async (t) => {
  const { bc, sweeper, open, put, publish } = rig(LIMITS);
  const slow = open();
  const reader = open();
  const v = variant('json', 0, 100);
  bc.attach(slow.s, ['m'], v);
  bc.attach(reader.s, ['m'], v);
  const newest = (x: typeof slow) => x.conn.messages().filter((m) => m.op === 'odds').at(-1) as { seq: number } | undefined;
  publish(put('m', 2));
  await waitFor(() => newest(slow)?.seq === 1, 'the first interval ended: the socket holds the first image', 10_000);
  // Held back until the interval ends; the socket falls behind meanwhile.
  publish(put('m', 2.1));
  slow.conn.buffered = 2000;
  sweeper.run(1);
  t.ok(slow.s.lag, 'behind');
  await waitFor(() => newest(reader)?.seq === 2, 'the interval ended: a reader on the topic got the newest image', 10_000);
  slow.conn.buffered = 0;
  sweeper.run(200);
  t.match(newest(slow), { seq: 2 }, 'its screen ends on the newest image, not on the one before the interval');
});
