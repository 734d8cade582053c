import t from 'tap';
import { CLOSE } from '../../src/errors.js';
import { variant } from '../../src/hub/variant.js';
import { rig } from './fakes.js';

/** The sweep's looks and what each subscriber decides on them, over fakes of uWS and a clock the test moves (fakes.ts). */
const LIMITS = { slowBytes: 1000, maxBytes: 100_000, slowCloseMs: 5000 };

/** A rig whose sweep runs at `ms` after the start: the clock moved there, readers' pings answered first. */
function setup() {
  const r = rig(LIMITS);
  const t0 = r.clock.now();
  const readers: Parameters<typeof r.read>[0][] = [];
  const at = (ms: number) => {
    r.clock.advance(t0 + ms - r.clock.now());
    for (const x of readers) r.read(x);
    r.sweep.run(r.clock.now());
  };
  /** A socket that reads everything it is sent, at once. */
  const reader = () => {
    const x = r.open();
    readers.push(x);
    return x;
  };
  return { ...r, t0, at, reader };
}

t.test('a socket backed up without falling further behind is closed once it has stayed so past the limit', async (t) => {
  const { at, reader: newReader, put, publish } = setup();
  const stuck = newReader();
  const reader = newReader();
  stuck.s.subscribe(['m'], variant('json'));
  reader.s.subscribe(['m'], variant('json'));
  publish(put('m', 2));
  // Between a quarter of the soft limit and the soft limit: never behind, never drained.
  stuck.conn.buffered = 600;
  at(0);
  t.equal(stuck.s.behind, false, 'under the soft limit: still on its topics');
  publish(put('m', 2.1));
  at(4000);
  t.equal(stuck.conn.closedWith, undefined, 'within the limit: kept');
  at(5001);
  t.same(stuck.conn.closedWith, CLOSE.SLOW.code, 'past it: closed as a slow consumer');
  t.equal(reader.conn.closedWith, undefined, 'the reader is untouched');
  publish(put('m', 2.2));
  t.equal(reader.conn.messages().at(-1)?.op === 'odds' && (reader.conn.messages().at(-1) as { seq: number }).seq, 3, 'and still gets every frame');
});

t.test('a socket that drains below a quarter of the soft limit starts its clock again', async (t) => {
  const { at, reader, put, publish } = setup();
  const a = reader();
  a.s.subscribe(['m'], variant('json'));
  publish(put('m', 2));
  a.conn.buffered = 600;
  at(0);
  a.conn.buffered = 100;
  publish(put('m', 2.1));
  at(4000);
  a.conn.buffered = 600;
  publish(put('m', 2.2));
  at(8000);
  t.equal(a.conn.closedWith, undefined, 'backed up twice for less than the limit each time');
  at(13001);
  t.same(a.conn.closedWith, CLOSE.SLOW.code);
});

t.test('over the soft limit a socket falls behind alone, and over the hard one it is closed at once', async (t) => {
  const { at, reader: newReader, put, publish } = setup();
  const slow = newReader();
  const huge = newReader();
  const reader = newReader();
  for (const x of [slow, huge, reader]) x.s.subscribe(['m'], variant('json'));
  publish(put('m', 2));
  slow.conn.buffered = 2000;
  huge.conn.buffered = 200_000;
  at(0);
  t.ok(slow.s.behind, 'behind');
  t.same(huge.conn.closedWith, CLOSE.SLOW.code);
  const before = slow.conn.frames.length;
  publish(put('m', 2.1));
  t.equal(slow.conn.frames.length, before, 'skipped');
  t.equal(reader.conn.frames.length, 2, 'the reader got both');
  slow.conn.buffered = 0;
  at(100);
  t.match(slow.conn.messages().at(-1), { op: 'odds', seq: 2, con: true }, 'drained: caught up with the newest image');
});

t.test('a socket that reads nothing it is sent is closed once its oldest probe has waited past the limit', async (t) => {
  const { at, open, reader, put, publish } = setup();
  const deaf = open();
  const ok = reader();
  for (const x of [deaf, ok]) x.s.subscribe(['m'], variant('json'));
  publish(put('m', 2));
  at(100);
  t.ok(deaf.conn.pings.length > 0, 'probed once it was sent something');
  at(5050);
  t.equal(deaf.conn.closedWith, undefined, 'within the limit: kept');
  at(5200);
  t.same(deaf.conn.closedWith, CLOSE.SLOW.code, 'past it: closed, however little uWS holds for it');
  t.equal(ok.conn.closedWith, undefined, 'a socket that answers its probes is kept');
});

t.test('publishers are never slowed by sockets: with every socket backed up the fan-out is not busy', async (t) => {
  const { at, bc, sweep, reader, put, publish } = setup();
  const all = Array.from({ length: 10 }, () => reader());
  for (const x of all) x.s.subscribe(['m'], variant('json'));
  publish(put('m', 2));
  for (const x of all) x.conn.buffered = 900;
  at(0);
  t.equal(bc.busy(), false, 'what a publisher\'s ack waits on does not count sockets');
  let eased = false;
  bc.publish(put('m', 2.1));
  await bc.eased().then(() => (eased = true));
  t.ok(eased, 'a batch\'s wait ends with the loop turn that publishes it');
  t.equal('busy' in sweep, false, 'the sweep offers publishers nothing to wait on');
});

t.test('heartbeats: after hb ms with no frame, direct or from a topic (noticed at the pass after it)', async (t) => {
  const { at, t0, reader, put, publish, clock } = setup();
  const a = reader();
  a.s.subscribe(['m'], variant('json'));
  clock.advance(3000);
  publish(put('m', 2, t0 + 3000));
  // The sweep passes every 100 ms: the frame is noticed at the pass after it.
  at(3100);
  at(5100);
  t.equal(a.conn.messages().filter((m) => m.op === 'hb').length, 0, 'the frame of its market counts');
  at(8100);
  t.equal(a.conn.messages().filter((m) => m.op === 'hb').length, 1, 'silent for hb ms: one heartbeat');
});

t.test('an idle socket is looked at once per heartbeat interval, not on every pass', async (t) => {
  const { at, reader, t0 } = setup();
  const a = reader();
  at(0);
  t.equal(a.s.nextLook, t0 + 5000, 'nothing sent, nothing on its way: its next look is its heartbeat');
  at(5000);
  t.equal(a.conn.messages().filter((m) => m.op === 'hb').length, 1);
  at(5100);
  t.equal(a.s.nextLook, t0 + 10_000, 'read its heartbeat: idle again until the next');
});

t.test('a socket that falls behind while an image waits for the end of the loop turn gets that image when it catches up', async (t) => {
  const { at, bc, reader, put, publish } = setup();
  const slow = reader();
  slow.s.subscribe(['m'], variant('json'));
  publish(put('m', 2));
  // Queued in this turn's batch, not yet on the topics, when the sweep finds the socket over its limit.
  bc.publish(put('m', 2.1));
  slow.conn.buffered = 2000;
  at(0);
  t.ok(slow.s.behind, 'behind');
  bc.flush();
  slow.conn.buffered = 0;
  at(100);
  const odds = slow.conn.messages().filter((m) => m.op === 'odds');
  t.match(odds.at(-1), { seq: 2 }, 'its screen ends on the newest image, not on the one before it');
});

t.test('a conflated socket that falls behind while its interval holds a market back gets the newest image when it catches up', async (t) => {
  const { at, reader: newReader, put, publish } = setup();
  const slow = newReader();
  const reader = newReader();
  const v = variant('json', 0, 100);
  slow.s.subscribe(['m'], v);
  reader.s.subscribe(['m'], v);
  const newest = (x: typeof slow) => x.conn.messages().filter((m) => m.op === 'odds').at(-1) as { seq: number } | undefined;
  publish(put('m', 2));
  at(100);
  t.equal(newest(slow)?.seq, 1, 'the first interval ended: the socket holds the first image');
  // Held back until the interval ends; the socket falls behind meanwhile.
  publish(put('m', 2.1));
  slow.conn.buffered = 2000;
  at(150);
  t.ok(slow.s.behind, 'behind');
  at(200);
  t.equal(newest(reader)?.seq, 2, 'the interval ended: a reader on the topic got the newest image');
  slow.conn.buffered = 0;
  at(300);
  t.match(newest(slow), { seq: 2 }, 'its screen ends on the newest image, not on the one before the interval');
});
