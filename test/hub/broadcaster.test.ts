import t from 'tap';
import { decodeServerProto } from '../../src/odds/codec.js';
import { variant } from '../../src/hub/variant.js';
import { rig } from './fakes.js';

/** The broadcaster over fakes of uWS (fakes.ts): it only encodes and publishes, once per variant; subscribers take what their topics carry. */
const setup = () => rig();

t.test('an update is encoded once per variant and published once per topic, however many sockets take it', async (t) => {
  const { topics, open, put, publish, metrics } = setup();
  const json = [open(), open(), open()];
  const shallow = [open('proto'), open('proto')];
  for (const { s } of json) s.subscribe(['m'], variant('json'));
  for (const { s } of shallow) s.subscribe(['m'], variant('proto', 1));
  topics.published.length = 0;
  publish(put('m', 2));
  t.equal(topics.published.length, 2, 'one publish per variant');
  t.equal(json[0].conn.frames[0], json[2].conn.frames[0], 'the very same frame for every socket of a variant');
  const one = decodeServerProto(shallow[1].conn.frames[0] as Uint8Array);
  t.same(one.op === 'odds' && one.r[0].b, [[2, 1]], 'depth 1 cut once for its sockets');
  t.same({ ...metrics.published }, { json: 1, proto: 1 });
  t.same({ ...metrics.delivered }, { json: 3, proto: 2 });
});

t.test('state frames reach every subscriber of the market at once, whatever its variant', async (t) => {
  const { bc, open } = setup();
  const a = open();
  const b = open('proto');
  a.s.subscribe(['m'], variant('json', 2));
  b.s.subscribe(['m'], variant('proto', 0, 1000));
  bc.publishState({ op: 'market', mid: 'm', s: false, go: false, rt: false });
  t.same(a.conn.messages(), [{ op: 'market', mid: 'm', s: false, go: false, rt: false }]);
  t.same(b.conn.messages(), [{ op: 'market', mid: 'm', s: false, go: false, rt: false }], 'conflation does not hold state back');
});

t.test('a conflated socket gets one frame per interval, the newest, marked when updates were held back', async (t) => {
  const { clock, open, put, publish } = setup();
  const live = open();
  const slow = open();
  live.s.subscribe(['m'], variant('json'));
  slow.s.subscribe(['m'], variant('json', 0, 100));
  for (let i = 0; i < 5; i++) publish(put('m', 2 + i / 100));
  t.equal(live.conn.frames.length, 5);
  t.equal(slow.conn.frames.length, 0, 'nothing before the interval ends');
  clock.advance(100);
  const got = slow.conn.messages();
  t.equal(got.length, 1);
  t.match(got[0], { op: 'odds', seq: 5, cf: true, con: false }, 'the newest image, marked cf');
  publish(put('m', 3));
  clock.advance(100);
  t.match(slow.conn.messages()[1], { seq: 6, cf: false }, 'one update in an interval: nothing was held back');
});

t.test('a socket that fell behind catches up with the newest images, changed state and one unsubscribed', async (t) => {
  const { bc, sweep, clock, open, put, publish } = setup();
  const { s, conn } = open();
  s.subscribe(['a', 'b', 'c'], variant('json'));
  publish(put('a', 2));
  conn.buffered = 5000;
  sweep.run(clock.now());
  t.ok(s.behind, 'behind: off its topics');
  const before = conn.frames.length;
  publish(put('a', 2.1));
  publish(put('a', 2.2));
  bc.publishState({ op: 'market', mid: 'b', s: false, go: false, rt: false });
  bc.publishState({ op: 'result', mid: 'c', mt: 'match-odd', res: '1', rt: false, ia: false });
  s.lose(['c']);
  t.equal(conn.frames.length, before, 'nothing sent while behind');
  conn.buffered = 0;
  s.drained();
  t.same(conn.messages().slice(before).map((m) => m.op === 'odds' ? `odds ${m.mid} ${m.seq} con=${m.con}` : `${m.op} ${'mid' in m ? m.mid : (m as { mids: string[] }).mids}`), [
    'odds a 3 con=true', 'market b', 'result c', 'unsubscribed c',
  ]);
  publish(put('a', 2.3));
  t.match(conn.messages().at(-1), { op: 'odds', seq: 4, con: false }, 'back on its topic');
});

t.test('concluded markets: each socket that takes them loses them and is told once, listing its own', async (t) => {
  const { subs, open, hub } = setup();
  const a = open();
  const b = open();
  a.s.subscribe(['x', 'y', 'z'], variant('json'));
  b.s.subscribe(['y'], variant('json'));
  subs.concluded(['x', 'y']);
  t.same(a.conn.messages(), [{ op: 'unsubscribed', mids: ['x', 'y'] }]);
  t.same(b.conn.messages(), [{ op: 'unsubscribed', mids: ['y'] }]);
  t.equal(hub.subscriptions(), 1, 'the count follows the index');
});

t.test('images of one turn go out together at its end, in order, and a subscribe in between gets the newest once', async (t) => {
  const { topics, bc, open, put } = setup();
  const a = open();
  a.s.subscribe(['m'], variant('json'));
  for (let i = 0; i < 3; i++) bc.publish(put('m', 2 + i / 100));
  t.equal(topics.published.length, 0, 'nothing handed to uWS yet');
  const late = open();
  late.s.subscribe(['m'], variant('json'));
  t.same(a.conn.messages().map((m) => m.op === 'odds' && m.seq), [1, 2, 3], 'the queue went out first, in order');
  t.same(late.conn.messages().map((m) => m.op === 'odds' && m.seq), [3], 'the new socket got the newest image once, directly');
  bc.publish(put('m', 3));
  await bc.eased();
  t.same(a.conn.messages().map((m) => m.op === 'odds' && m.seq), [1, 2, 3, 4], 'and the next turn\'s image at the end of it');
});

t.test('freshness: to every variant at once; before a subscribe\'s image only while stale; in the catch-up of a socket behind when it changed', async (t) => {
  const { bc, sweep, clock, open, put, publish } = setup();
  const a = open();
  const b = open('proto');
  publish(put('m', 2));
  a.s.subscribe(['m', 'n'], variant('json', 2));
  b.s.subscribe(['m'], variant('proto', 0, 1000));
  const stale = { op: 'freshness', mid: 'm', live: false, why: 'publisher', at: 123 } as const;
  bc.publishState(stale);
  t.same(a.conn.messages().at(-1), stale);
  t.same(b.conn.messages().at(-1), stale, 'in protobuf, and conflation does not hold it back');

  const late = open();
  late.s.subscribe(['m', 'n'], variant('json'));
  t.same(late.conn.messages().map((m) => m.op), ['freshness', 'odds'], 'its staleness, then the image; nothing for the live market');
  t.same(late.conn.messages()[0], stale);
  const resumed = open();
  const e = put('m', 2.1);
  publish(e);
  resumed.s.subscribe(['m'], variant('json'), { epoch: e.epoch, seqs: { m: e.seq } });
  t.same(resumed.conn.messages(), [stale], 'a resume that holds the image is still told the market is stale');

  a.conn.buffered = 5000;
  sweep.run(clock.now());
  const before = a.conn.frames.length;
  bc.publishState({ op: 'freshness', mid: 'n', live: false, why: 'late', at: 200 });
  bc.publishState({ op: 'freshness', mid: 'm', live: true, at: 300 });
  t.equal(a.conn.frames.length, before, 'nothing while behind');
  a.conn.buffered = 0;
  a.s.drained();
  t.same(a.conn.messages().slice(before).filter((m) => m.op === 'freshness'), [
    { op: 'freshness', mid: 'm', live: true, at: 300 }, { op: 'freshness', mid: 'n', live: false, why: 'late', at: 200 },
  ], 'both changes, once each, after the catch-up images');
  const after = open();
  after.s.subscribe(['m'], variant('json'));
  t.same(after.conn.messages().map((m) => m.op), ['odds'], 'live again: a subscribe gets the image alone');
});

t.test('sockets asking a hundred different intervals share the few variants of their presets: one encoding per frame', async (t) => {
  const { topics, clock, open, put, publish } = setup();
  publish(put('m', 2, undefined, 10));
  const socks = Array.from({ length: 100 }, (_, i) => {
    const x = open('proto');
    x.s.subscribe(['m'], variant('proto', 0, 100 + i, true));
    return x;
  });
  topics.published.length = 0;
  publish(put('m', 2.1, undefined, 10));
  publish(put('m', 2.2, undefined, 10));
  clock.advance(200);
  t.ok(socks.every((x) => x.conn.frames.length === 2), 'every socket\'s conflated frame');
  t.same(new Set(topics.published.map((p) => p.topic)), new Set(['p0.100d/m', 'p0.200d/m']), 'two presets, two topics, for 100 intervals');
  t.equal(topics.published.length, 2, 'one publish each');
  t.match(decodeServerProto(socks[99].conn.frames[1] as Uint8Array), { op: 'delta', seq: 3, from: 1 }, 'a delta from the image each holds');
});

t.test('a conflated delta is encoded once per base: variants holding the same image share the very same bytes', async (t) => {
  const { clock, open, put, publish } = setup();
  publish(put('m', 2, undefined, 10));
  const fast = open('proto');
  const slow = open('proto');
  fast.s.subscribe(['m'], variant('proto', 0, 100, true));
  slow.s.subscribe(['m'], variant('proto', 0, 200, true));
  publish(put('m', 2.1, undefined, 10));
  clock.advance(200);
  t.ok(fast.conn.frames.length === 2 && slow.conn.frames.length === 2, 'both intervals\' frames');
  t.equal(fast.conn.frames[1], slow.conn.frames[1], 'one encoding of the delta from seq 1 to seq 2, not one per interval');
  t.match(decodeServerProto(slow.conn.frames[1] as Uint8Array), { op: 'delta', seq: 2, from: 1 });
});
