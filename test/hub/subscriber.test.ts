import t, { type Test } from 'tap';
import type { Frame } from '../../src/odds/book.js';
import { decodeServerJson } from '../../src/odds/codec.js';
import type { ServerMessage } from '../../src/odds/messages.js';
import type { Subscriber } from '../../src/hub/subscriber.js';
import { seeded } from '../../src/lib/random.js';
import { CONFLATE_PRESETS, conflatePreset, variant, wireBytes } from '../../src/hub/variant.js';
import { FakeConn, type FakeClock, type FakeTopics, rig } from './fakes.js';

/**
 * A subscriber is the one owner of its socket's state: the topics it is on follow from what it
 * takes and what it is owed, whatever order the changes come in; and the age of what its screen
 * holds is bounded by what its link can carry. Over fakes of uWS and a clock the test moves.
 */

const live = variant('json');

t.test('subscribe and unsubscribe keep the socket on one topic per market, the variant it takes', async (t) => {
  const { topics, open } = rig();
  const { s, conn } = open();
  const deep = variant('json', 2);
  s.subscribe(['a', 'b'], live);
  s.subscribe(['a'], live);
  t.same(topics.of(conn), ['j$feed', 'j0.0/a', 'j0.0/b'], 'the same way again changes nothing');
  s.subscribe(['a'], deep);
  t.same(topics.of(conn), ['j$feed', 'j0.0/b', 'j2.0/a'], 'moved to the new variant\'s topic, off the old');
  t.same([...s.markets()].map(([mid, v]) => `${mid} ${v.key}`), ['a j2.0', 'b j0.0']);
  t.same(s.unsubscribe(['b', 'b', 'x']), ['b'], 'only what it took');
  t.same(topics.of(conn), ['j$feed', 'j2.0/a']);
});

t.test('behind, it is on no market topic; what it takes or drops meanwhile joins or leaves as it catches up', async (t) => {
  const { topics, open, sweep, clock, put, publish } = rig();
  const { s, conn } = open();
  s.subscribe(['a', 'b'], live);
  publish(put('a', 2));
  conn.buffered = 5000;
  sweep.run(clock.now());
  t.ok(s.behind);
  t.same(topics.of(conn), ['j$feed'], 'off every market topic, still on the feed\'s');
  s.subscribe(['c'], live);
  s.unsubscribe(['b']);
  t.same(topics.of(conn), ['j$feed'], 'taking and dropping while behind touches no topic');
  conn.buffered = 0;
  s.drained();
  t.equal(s.behind, false);
  t.same(topics.of(conn), ['j$feed', 'j0.0/a', 'j0.0/c'], 'back on exactly the topics of what it takes now');
});

t.test('a market lost while owed is told after its final state; one lost on its topic at once', async (t) => {
  const { open, sweep, clock, bc, put, publish } = rig();
  const { s, conn } = open();
  s.subscribe(['a', 'b', 'c'], live);
  s.lose(['a']);
  t.same(conn.messages().at(-1), { op: 'unsubscribed', mids: ['a'] }, 'on its topic: told at once');
  publish(put('b', 2));
  conn.buffered = 5000;
  sweep.run(clock.now());
  const before = conn.frames.length;
  bc.publishState({ op: 'market', mid: 'b', s: false, go: true, rt: false });
  s.lose(['b']);
  t.equal(conn.frames.length, before, 'nothing while behind');
  conn.buffered = 0;
  s.drained();
  t.same(conn.messages().slice(before), [{ op: 'market', mid: 'b', s: false, go: true, rt: false }, { op: 'unsubscribed', mids: ['b'] }], 'its final state, then that it is gone');
});

/** Each frame sent as its op and market, an image marked when it went as skipped (`con`). */
const told = (conn: FakeConn, from = 0) => conn.messages().slice(from).map((m) => `${m.op}${m.op === 'odds' && m.con ? ' con' : ''} ${'mid' in m ? m.mid : ''}`);

t.test('a market taken afresh is sent where it stands after its image, however it is taken; an open unsettled one its image alone', async (t) => {
  const model = { eventMarkets: () => ['a', 'b', 'c'], sportMarkets: () => [], factsOf: () => ({ type: 'match-odd', bettingType: 'ODDS' }) };
  const { open, bc, put, publish, subs } = rig({}, model as Parameters<typeof rig>[1]);
  // Made inactive and settled, with no terms; then a market that went back to what an open one says; then one with terms.
  bc.publishState({ op: 'market', mid: 'a', s: false, go: false, rt: false });
  bc.publishState({ op: 'result', mid: 'a', mt: 'match-odd', res: '1', rt: false, ia: false });
  bc.publishState({ op: 'market', mid: 'b', s: false, go: false, rt: false });
  bc.publishState({ op: 'market', mid: 'b', s: true, go: false, rt: false });
  bc.publishState({ op: 'result', mid: 'b', mt: 'match-odd', res: '', rt: false, ia: false });
  bc.publishState({ op: 'market', mid: 'c', s: true, go: false, rt: false, terms: { bd: 5 } });
  for (const mid of ['a', 'b', 'c']) publish(put(mid, 2));
  const expected = ['odds a', 'market a', 'result a', 'odds b', 'odds c', 'market c'];

  const named = open();
  named.s.subscribe(['a', 'b', 'c'], live);
  t.same(told(named.conn), expected, 'by ID');
  t.same(named.conn.messages()[1], { op: 'market', mid: 'a', s: false, go: false, rt: false }, 'the frame as it was published');
  named.s.subscribe(['a'], live);
  t.same(told(named.conn, expected.length), ['odds a', 'market a', 'result a'], 'asked again: again');

  const filtered = open();
  subs.subscribe(filtered.s, { requestId: 1, marketIds: [], eventIds: [7], sportIds: [], depth: 0, conflateMs: 0, deltas: false });
  t.same(told(filtered.conn), ['ack ', ...expected], 'by an event filter, after its ack');

  const appeared = open();
  appeared.s.setFilter('events', 7, live);
  subs.appeared('a', 7, 4);
  t.same(told(appeared.conn), ['odds a', 'market a', 'result a'], 'a market appearing under its filter');
});

t.test('caught up, a market it took before falling behind is sent what changed; one taken while behind where it stands', async (t) => {
  const { open, sweep, clock, bc, put, publish } = rig();
  const { s, conn } = open();
  for (const mid of ['a', 'b']) publish(put(mid, 2));
  s.subscribe(['a', 'b'], live);
  bc.publishState({ op: 'result', mid: 'b', mt: 'match-odd', res: '2', rt: false, ia: false });
  publish(put('a', 3));
  conn.buffered = 5000;
  sweep.run(clock.now());
  t.ok(s.behind);
  const from = conn.frames.length;
  publish(put('a', 4));
  bc.publishState({ op: 'market', mid: 'a', s: false, go: false, rt: false });
  bc.publishState({ op: 'market', mid: 'c', s: false, go: false, rt: false });
  publish(put('c', 2));
  s.subscribe(['c'], live);
  conn.buffered = 0;
  s.drained();
  t.same(told(conn, from), ['odds con a', 'market a', 'odds c', 'market c'], 'a: skipped to its newest image, then its state that changed; b: nothing (its result came on its topic); c: image and state');
});

t.test('closed, it sends nothing and changes no topic (uWS throws on a closed socket)', async (t) => {
  const { topics, open, hub } = rig();
  const { s, conn } = open();
  s.subscribe(['a'], live);
  hub.close(s, 1000);
  t.equal(s.closed, true);
  const before = conn.frames.length;
  s.send({ op: 'hb', ts: 1 });
  s.subscribe(['b'], live);
  s.end(4008, 'slow consumer');
  t.equal(conn.frames.length, before);
  t.same(topics.of(conn), ['j$feed', 'j0.0/a'], 'uWS drops its topics itself');
  t.equal(conn.closedWith, undefined, 'no second close');
});

t.test('closed by the server, it leaves its topics first: no frame may follow its close frame', async (t) => {
  const { topics, open } = rig();
  const { s, conn } = open();
  conn.end = (code) => void (conn.closedWith = code);
  s.subscribe(['a'], live);
  s.end(4008, 'slow consumer');
  t.same(topics.of(conn), [], 'off every topic');
  t.equal(conn.closedWith, 4008);
  s.subscribe(['b'], live);
  t.same(topics.of(conn), [], 'and joins none while its close completes');
});

t.test('conflation intervals snap up to a preset: any value a client asks runs as one of a few variants', async (t) => {
  t.equal(conflatePreset(0), 0, 'every update stays every update');
  t.equal(conflatePreset(100), 100);
  t.equal(conflatePreset(101), 200, 'never more often than asked');
  t.equal(conflatePreset(1001), 2000);
  t.equal(conflatePreset(60000), 60000);
  const keys = new Set<string>();
  for (let ms = 100; ms <= 60000; ms += 7) keys.add(variant('proto', 0, ms, true).key);
  t.equal(keys.size, CONFLATE_PRESETS.length, 'thousands of intervals, as many variants as presets');
  t.equal(variant('json', 0, 150).conflate, 200, 'the variant runs at its preset');
});

t.test('not yet measured, it falls behind as soon as a publish puts more on its way than a weak link reads in half the bound, and catches up once it has read it', async (t) => {
  const { open, read, put, publish } = rig();
  const x = open();
  x.s.subscribe(['a', 'b'], live);
  publish(put('b', 2));
  read(x);
  let n = 0;
  // Images of three runners, about 200 bytes each: past 64 KiB within a few hundred.
  while (!x.s.behind) {
    if (++n > 2000) throw new Error('never behind');
    publish(put('a', 2 + (n % 90) / 100, undefined, 3));
  }
  const sent = x.conn.frames.reduce((sum, f) => sum + wireBytes(f), 0);
  t.ok(sent > 64 * 1024 && sent < 64 * 1024 + 1024, `behind right after the publish that passed the window (${sent} bytes on its way), not at the next pass`);
  t.equal(x.conn.pings.length, 1, 'probed at once, so it catches up as soon as it has read what is on its way');
  const before = x.conn.frames.length;
  publish(put('a', 3, undefined, 3));
  publish(put('b', 2.5));
  t.equal(x.conn.frames.length, before, 'skipped while behind');
  read(x);
  t.same(x.conn.messages().slice(before).map((m) => m.op === 'odds' && `${m.mid} ${m.seq} con=${m.con}`), [`a ${n + 1} con=true`, 'b 2 con=true'], 'the newest image of each market that moved');
  t.equal(x.s.behind, false, 'back on its topics');
});

t.test('a probe unanswered for half the bound: behind, however little is on its way', async (t) => {
  const { open, sweep, clock, put, publish } = rig();
  const x = open();
  x.s.subscribe(['a'], live);
  publish(put('a', 2));
  clock.advance(100);
  sweep.run(clock.now());
  t.equal(x.conn.pings.length, 1);
  clock.advance(900);
  sweep.run(clock.now());
  t.equal(x.s.behind, false, 'within half the bound');
  clock.advance(200);
  sweep.run(clock.now());
  t.equal(x.s.behind, true, 'past it');
});

t.test('probed once an eighth of the bound until its pace is known, then once a quarter while it reads with room to spare', async (t) => {
  const { open, sweep, clock, read, put, publish } = rig();
  const x = open();
  x.s.subscribe(['a'], live);
  /** Passes of the sweep (one each 100 ms, frames published before each, everything read after): the probes sent. */
  const probes = (passes: number) => {
    let sent = 0;
    for (let i = 0; i < passes; i++) {
      for (let k = 0; k < 10; k++) publish(put('a', 2 + (i * 10 + k) / 1000, clock.now(), 3));
      clock.advance(100);
      sweep.run(clock.now());
      sent += x.conn.pings.length;
      read(x);
    }
    return sent;
  };
  t.equal(probes(9), 3, 'unmeasured: a probe every 300 ms (an eighth of 2 s, at the sweep\'s 100 ms passes)');
  t.equal(probes(20), 4, 'measured, far from its window: a probe every 500 ms, half as many pongs to read');
});

t.test('owed a market that moved for a quarter of the bound: told behind, once; live again only after keeping up for a quarter of it', async (t) => {
  const { open, sweep, clock, read, put, publish, bc } = rig();
  const x = open();
  x.s.subscribe(['a', 'b', 'c'], live);
  bc.publishState({ op: 'freshness', mid: 'c', live: false, why: 'publisher', at: 1 });
  publish(put('a', 2));
  read(x);
  x.conn.buffered = 5000;
  sweep.run(clock.now());
  const from = x.conn.frames.length;
  publish(put('a', 2.1));
  publish(put('c', 2.1));
  clock.advance(400);
  sweep.run(clock.now());
  t.same(x.conn.messages().slice(from), [], 'not yet');
  clock.advance(200);
  sweep.run(clock.now());
  clock.advance(100);
  sweep.run(clock.now());
  t.same(x.conn.messages().slice(from).map((m) => m.op === 'freshness' && `${m.mid} ${m.why} at=${m.at - clock.now()}`), ['a behind at=-700', 'c behind at=-700'],
    'each market that moved, once, since when it was owed; b did not move');
  x.conn.buffered = 0;
  const round = x.conn.frames.length;
  read(x);
  t.same(x.conn.messages().slice(round).map((m) => `${m.op} ${'mid' in m ? m.mid : ''}`), ['odds a', 'freshness c', 'odds c'],
    'caught up: the newest images, c told it is stale (its publisher) before its image, no live yet');
  clock.advance(400);
  read(x);
  sweep.run(clock.now());
  t.same(x.conn.messages().slice(round + 3), [], 'kept up less than a quarter of the bound');
  clock.advance(200);
  sweep.run(clock.now());
  t.same(x.conn.messages().slice(round + 3).filter((m) => m.op === 'freshness').map((m) => m.op === 'freshness' && `${m.mid} ${m.live}`), ['a true'],
    'a is live again; c stays stale for its publisher');
});

/**
 * A client on a link that reads `rate` bytes a ms: frames and pings queue in the order sent and
 * are read at that pace; a ping is answered when it is read. What it read, and when.
 */
class PacedConn extends FakeConn {
  private readonly queue: { left: number; frame?: Frame; ping?: ArrayBuffer }[] = [];
  readonly got: { msg: ServerMessage; at: number }[] = [];
  s!: Subscriber;
  /** When the server handles a pong the client sent at `at`: at once, unless a test delays it. */
  handled: (at: number) => number = (at) => at;
  private readonly pongs: { due: number; ping: ArrayBuffer }[] = [];
  constructor(topics: FakeTopics, private readonly clock: FakeClock, public rate: number) {
    super(topics);
  }
  override deliver(frame: Frame): void {
    this.queue.push({ left: wireBytes(frame), frame });
  }
  override ping(message?: Uint8Array): number {
    this.queue.push({ left: 6, ping: new Uint8Array(message ?? []).buffer });
    return 1;
  }
  /** Reads for `ms` at its pace, answering the pings it reads. */
  readFor(ms: number): void {
    let budget = this.rate * ms;
    while (budget > 0 && this.queue.length) {
      const head = this.queue[0];
      const take = Math.min(budget, head.left);
      head.left -= take;
      budget -= take;
      if (head.left > 0) break;
      this.queue.shift();
      if (head.ping) this.pongs.push({ due: this.handled(this.clock.now()), ping: head.ping });
      else this.got.push({ msg: decodeServerJson(head.frame as string), at: this.clock.now() });
    }
    this.answer();
  }
  /** Bytes on their way to it, not read yet. */
  get unread(): number {
    return this.queue.reduce((n, q) => n + q.left, 0);
  }
  /** Hands the server the pongs due by now. */
  answer(): void {
    while (this.pongs.length && this.pongs[0].due <= this.clock.now()) this.s.pong(this.pongs.shift()!.ping);
  }
}

/**
 * A reader at 40 KB/s under a feed several times that, reading every `everyMs` (what it reads then
 * is what its link carried meanwhile): every price it is shown as live is within the bound of the
 * newest, and once it reads fast it is live with the newest.
 */
async function slowLink(t: Test, gap: () => number, handled?: (at: number) => number): Promise<void> {
  const { open, clock, topics, sweep, book, put, publish } = rig({ slowCloseMs: 3_600_000 });
  sweep.start();
  const conn = new PacedConn(topics, clock, 40);
  if (handled) conn.handled = handled;
  const { s } = open('json', 5000, conn);
  conn.s = s;
  const mids = Array.from({ length: 20 }, (_, i) => `1.${i}`);
  for (const mid of mids) publish(put(mid, 2, undefined, 3));
  s.subscribe(mids, live);
  /** When each seq of each market was published: a screen holding seq k is behind the newest from the publish of k + 1. */
  const published = new Map<string, number[]>();
  const screen = new Map<string, { seq: number; told: boolean }>();
  const worst = { age: 0, behind: 0, notices: 0 };
  let n = 0;
  let readAt = clock.now();
  let due = readAt + gap();
  const step = (ms: number, feed: boolean) => {
    if (feed) {
      for (const mid of mids.filter((_, i) => (n + i) % 4 === 0)) {
        const e = put(mid, 2 + (n % 90) / 100, undefined, 3);
        (published.get(mid) ?? published.set(mid, []).get(mid)!)[e.seq] = clock.now();
        publish(e);
      }
    }
    n++;
    clock.advance(ms);
    const from = conn.got.length;
    if (clock.now() >= due) {
      conn.readFor(clock.now() - readAt);
      readAt = clock.now();
      due = readAt + gap();
    }
    conn.answer();
    for (const { msg, at } of conn.got.slice(from)) {
      if (msg.op === 'freshness') {
        const held = screen.get(msg.mid) ?? { seq: 0, told: false };
        held.told = !msg.live;
        if (msg.why === 'behind') worst.notices++;
        screen.set(msg.mid, held);
      } else if (msg.op === 'odds') {
        const held = screen.get(msg.mid) ?? { seq: 0, told: false };
        if (!held.told) worst.age = Math.max(worst.age, at - msg.pt);
        screen.set(msg.mid, { ...held, seq: msg.seq });
      }
    }
    // Every market shown as live is the newest, or was superseded less than the bound ago.
    for (const mid of mids) {
      const held = screen.get(mid);
      const newer = published.get(mid)?.[(held?.seq ?? 0) + 1];
      if (held && !held.told && newer !== undefined) worst.behind = Math.max(worst.behind, clock.now() - newer);
    }
  };
  for (let i = 0; i < 2000; i++) step(10, true);
  t.ok(worst.notices > 0, `told behind (${worst.notices} notices): it cannot keep up`);
  t.ok(worst.age <= 2000, `every image read while live was at most 2 s old (the oldest ${worst.age} ms)`);
  t.ok(worst.behind <= 2000, `every market shown as live was within 2 s of the newest (the furthest behind ${worst.behind} ms)`);
  t.ok(!s.closed, 'a slow reader that reads is kept');

  conn.rate = 100_000;
  for (let i = 0; i < 300; i++) step(10, i < 100);
  for (const mid of mids) {
    t.equal(screen.get(mid)?.seq, book.get(mid)!.seq, `${mid}: the newest image`);
    t.equal(screen.get(mid)?.told, false, `${mid}: live`);
  }
}

t.test('a reader at 40 KB/s, reading as its link carries it, under a feed several times that', (t) => slowLink(t, () => 10));

// Two answers read in one go said the client read everything between them in a millisecond: it
// was taken to read 25 times faster than it does, sent seconds of frames, and shown them as live.
t.test('a reader at 40 KB/s that reads what came every 100 ms (its answers to several probes at once)', (t) => slowLink(t, () => 100));

// The server's own loop late: the pongs of 300 ms handled together, each span is measured from
// where the client stood at the last of them, never the first (which would make it seem faster).
t.test('a reader at 40 KB/s whose answers the server handles together every 300 ms', (t) => slowLink(t, () => 10, (at) => 300 * Math.ceil((at + 1) / 300)));

/**
 * A client on a fast link far away (its answers come 350 ms after it read, its pace 1 MB/s),
 * sent a light feed for a while, then a burst of about 30 KB: its probes wait the way there and back,
 * not for its reading, so it is never taken for a slow reader, and the burst goes to it whole.
 */
t.test('a fast reader far away keeps a window for a burst: the way there and back is not slowness', async (t) => {
  const { open, clock, topics, sweep, put, publish, metrics } = rig();
  sweep.start();
  const conn = new PacedConn(topics, clock, 1000);
  conn.handled = (at) => at + 350;
  const { s } = open('json', 5000, conn);
  conn.s = s;
  const mids = Array.from({ length: 20 }, (_, i) => `1.${i}`);
  for (const mid of mids) publish(put(mid, 2, undefined, 3));
  s.subscribe(mids, live);
  for (let n = 0; n < 1000; n++) {
    publish(put(mids[n % 20], 2 + (n % 90) / 100, undefined, 3));
    clock.advance(10);
    conn.readFor(10);
  }
  const fellBehind = async () => (await metrics.fellBehind.get()).values[0]?.value ?? 0;
  const fell = await fellBehind();
  // Twelve markets at once, 40 runners each: more than the least window, well within the first.
  const before = conn.unread;
  for (const mid of mids.slice(0, 12)) publish(put(mid, 3, undefined, 40));
  const bytes = conn.unread - before;
  t.ok(bytes > 16 * 1024 && bytes < 48 * 1024, `a burst of ${bytes} bytes`);
  for (let n = 0; n < 100; n++) {
    clock.advance(10);
    conn.readFor(10);
  }
  const burst = conn.got.filter((g) => g.msg.op === 'odds' && g.msg.r.length === 40);
  t.equal(await fellBehind() - fell, 0, 'it never fell behind');
  t.equal(burst.length, 12, 'every image of the burst reached it');
  t.notOk(conn.got.some((g) => g.msg.op === 'freshness'), 'and nothing was told behind');
});

// A reader on a busy machine: scheduled late and irregularly (10 to 600 ms apart, mostly soon),
// it reads what its link carried meanwhile in one go, so a probe is often answered at once after
// a long wait. (A reader that stalls longer with data on its way is told by the `clock` frames.)
for (const seed of [1, 2, 7, 8]) {
  t.test(`a reader at 40 KB/s scheduled irregularly, 10 to 600 ms apart (seed ${seed})`, (t) => {
    const random = seeded(seed);
    return slowLink(t, () => 10 * (1 + Math.floor(random() ** 3 * 60)));
  });
}
