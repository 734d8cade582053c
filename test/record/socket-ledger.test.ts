/**
 * A subscriber's ledger (unit, over the hub's fakes and a clock the test moves): each market's
 * life on the subscriber (taken, owed, sent its image and back on its topic, told `behind` and
 * `live`, dropped, closed) is told to the ledger where it happens, and the notes the record would
 * keep, replayed, give exactly the images each socket received, what it skipped, and when it was
 * told its market was behind.
 */
import t from 'tap';
import type { OddsMessage } from '../../src/odds/messages.js';
import { variant } from '../../src/hub/variant.js';
import { RecordedLedger } from '../../src/record/ledger.js';
import { LedgerReplay, type Span } from '../../src/record/spans.js';
import { type FakeConn, rig } from '../hub/fakes.js';

const live = variant('json');

/** The record's taps, keeping each ledger note in order with the test clock's time. */
function recording(now: () => number) {
  const notes: { at: number; topic: string; body: Record<string, unknown> }[] = [];
  const ledger = new RecordedLedger({ pod: 'p1', note: (topic, body) => void notes.push({ at: now(), topic, body }) });
  /** A socket's ledger replayed, as the record's routes replay it. */
  const replay = (id: number) => {
    const r = new LedgerReplay();
    for (const n of notes) if (n.topic === 'ledger' && n.body.conn === `p1.${id}`) r.apply({ at: n.at, op: String(n.body.op), body: n.body });
    return r;
  };
  return { notes, ledger, replay };
}

function setup() {
  let clockNow = () => 0;
  const rec = recording(() => clockNow());
  const r = rig({}, undefined, rec.ledger);
  clockNow = () => r.clock.now();
  return { ...r, ...rec };
}

/** Every seq an unconflated span sent: `from` when it was sent it as it joined, then each to `to`. */
const sentBy = (spans: Span[]): number[] => spans.flatMap((s) => {
  const first = s.sent ? s.from! : s.from! + 1;
  return Array.from({ length: s.to! - first + 1 }, (_, i) => first + i);
});
const received = (conn: FakeConn, mid: string): number[] => conn.messages().filter((m): m is OddsMessage => m.op === 'odds' && m.mid === mid).map((m) => m.seq);

t.test('a socket that falls behind, is told behind, is sent the newest and told live: its spans, skip and behind stretch are what it received', async (t) => {
  const { open, sweep, clock, read, put, publish, replay } = setup();
  publish(put('a', 2));
  const x = open();
  x.s.subscribe(['a', 'b'], live);
  for (let i = 1; i < 3; i++) publish(put('a', 2 + i / 100));
  read(x);
  x.conn.buffered = 5000;
  sweep.run(clock.now());
  t.equal(x.s.behind, true, 'fell behind');
  for (let i = 0; i < 4; i++) publish(put('a', 2.1 + i / 100));
  clock.advance(700);
  sweep.run(clock.now());
  const notice = x.conn.messages().find((m) => m.op === 'freshness' && m.why === 'behind');
  t.ok(notice, 'told a is behind');
  x.conn.buffered = 0;
  read(x);
  t.equal(x.s.behind, false, 'sent the newest, back on its topics');
  clock.advance(600);
  read(x);
  sweep.run(clock.now());
  t.ok(x.conn.messages().some((m) => m.op === 'freshness' && m.live), 'told a is live again');
  publish(put('a', 2.5));
  x.s.unsubscribe(['b']);
  x.conn.end(1000);
  t.equal(x.s.closed, true);

  const r = replay(x.s.id);
  const a = r.markets.get('a')!;
  t.same(sentBy(a.spans), received(x.conn, 'a'), 'the spans are exactly the seqs it received');
  t.same(a.skipped.map(({ from, to }) => [from, to]), [[4, 6]], 'it skipped what was published while it was off its topic, the newest excepted');
  t.same(a.behind.map((b) => [b.since, b.end !== null]), [[notice!.op === 'freshness' && notice!.at, true]], 'one stretch told behind, since when the notice said, ended by its live');
  t.same(r.markets.get('b')!.spans.map((s) => [s.from, s.to]), [[null, null], [null, null]], 'b left its topic and joined it again with a, never having an image');
  t.same(r.markets.get('b')!.behind, [], 'b did not move: never told behind');
  t.equal(r.now.size, 0, 'closed: nothing held');
});

t.test('left and joined again with no newer image: the image it held is not counted again', async (t) => {
  const { open, sweep, clock, read, put, publish, replay } = setup();
  publish(put('a', 2));
  const x = open();
  x.s.subscribe(['a'], live);
  read(x);
  x.conn.buffered = 5000;
  sweep.run(clock.now());
  t.equal(x.s.behind, true);
  x.conn.buffered = 0;
  x.s.drained();
  t.equal(x.s.behind, false);
  publish(put('a', 2.1));
  const a = replay(x.s.id).markets.get('a')!;
  t.same(a.spans.map((s) => [s.from, s.sent, s.to]), [[1, true, 1], [1, false, null]], 'joined again holding seq 1, not sent it');
  t.same(received(x.conn, 'a'), [1, 2]);
  t.same(a.skipped, []);
});

t.test('taken again another way: the old span ends with what its topic had handed it, the new one starts with the image it was sent', async (t) => {
  const { open, read, put, publish, replay } = setup();
  publish(put('a', 2));
  const x = open();
  x.s.subscribe(['a'], live);
  publish(put('a', 2.1));
  read(x);
  x.s.subscribe(['a'], variant('json', 1));
  publish(put('a', 2.2));
  const a = replay(x.s.id).markets.get('a')!;
  t.same(a.spans.map((s) => [s.variant, s.from, s.sent, s.to]), [['j0.0', 1, true, 2], ['j1.0', 2, true, null]]);
  t.same(received(x.conn, 'a'), [1, 2, 2, 3], 'sent its image again as it took it again');
});

t.test('a resume holding the newest is sent nothing; its filters (with what they narrow to) and its close are in its ledger', async (t) => {
  const { open, put, publish, replay, notes } = setup();
  publish(put('a', 2));
  const x = open();
  x.s.subscribe(['a'], live, { epoch: 'e', seqs: { a: 1 } });
  x.s.setFilter('events', 7, live, { types: new Set(['match-odd']), turnInPlay: true });
  t.same(received(x.conn, 'a'), [], 'held the newest already');
  x.conn.end(4008);
  const a = replay(x.s.id).markets.get('a')!;
  t.same(a.spans.map((s) => [s.from, s.sent, s.to]), [[1, false, 1]]);
  const ops = notes.filter((n) => n.topic === 'ledger').map((n) => `${n.body.op}${n.body.code ? ` ${n.body.code}` : ''}`);
  t.same(ops, ['take', 'join', 'filter', 'close 4008'], 'one note an event, the close with its code, once');
  t.match(notes.find((n) => n.body.op === 'filter')?.body, { kind: 'events', id: 7, variant: 'j0.0', narrowing: { types: ['match-odd'], turnInPlay: true } });
});

t.test('a conflated variant\'s sends are noted per variant, not per socket', async (t) => {
  const { open, clock, put, publish, notes } = setup();
  const thin = variant('json', 0, 100);
  const [x, y] = [open(), open()];
  x.s.subscribe(['a'], thin);
  y.s.subscribe(['a'], thin);
  for (let i = 0; i < 5; i++) publish(put('a', 2 + i / 100));
  clock.advance(100);
  const sent = notes.filter((n) => n.topic === 'sent').map((n) => [n.body.variant, n.body.seq]);
  t.same(sent, [['j0.100', 5]], 'the newest, once for both sockets');
  t.same(received(x.conn, 'a'), [5], 'what its topic carried');
});
