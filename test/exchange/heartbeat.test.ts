/**
 * The publisher's heartbeats, over a fake socket and a clock the test moves: an empty batch once
 * nothing was sent for half the declared liveness interval, so the service (which waits two) never
 * takes a quiet publisher for a dead one; none while the source is not current; none after it failed.
 */
import t from 'tap';
import { Publisher } from '../../src/exchange/publisher.js';
import { FakeClock, FakeSocket } from './fake-ingest.js';

function setUp(liveMs = 1000, source = { current: true }) {
  const socket = new FakeSocket();
  const clock = new FakeClock();
  const publisher = new Publisher(socket, { liveMs, clock, source });
  const heartbeats = () => socket.sent.filter((s) => /^\{"id":\d+,"data":\[\]\}$/.test(s)).length;
  return { socket, clock, publisher, source, heartbeats };
}

t.test('a quiet publisher sends {"id":N,"data":[]} every half interval: well inside the two the service waits', async (t) => {
  const { socket, clock, publisher, heartbeats } = setUp(1000);
  t.equal(publisher.liveMs, 1000);
  t.ok(clock.periods().every((ms) => ms <= 125), `looked at every ${clock.periods().join(", ")} ms: a heartbeat is at most an eighth of an interval late`);
  clock.advance(499);
  t.equal(heartbeats(), 0, 'not before half an interval of quiet');
  clock.advance(1);
  t.same(socket.sent, ['{"id":1,"data":[]}'], 'the empty batch of docs/ingest.md, numbered like any batch');
  clock.advance(10_000);
  t.equal(heartbeats(), 21, 'one every half interval');
  t.equal(publisher.heartbeats, 21, 'counted');
  // The longest silence the service sees is half an interval and a tick: never the two that make markets stale.
  t.same(socket.sent.map((s) => (JSON.parse(s) as { id: number }).id), Array.from({ length: 21 }, (_, i) => i + 1), 'numbered one after another like any batch');
});

t.test('batches are signs of life: no heartbeat while something went within half an interval', async (t) => {
  const { socket, clock, publisher, heartbeats } = setUp(2000);
  for (let i = 0; i < 20; i++) {
    clock.advance(900);
    void publisher.sendEncoded(['{"kind":"odds"}']);
  }
  t.equal(heartbeats(), 0, 'a batch every 900 ms of a 2000 ms interval: no heartbeat needed');
  clock.advance(1000);
  t.equal(heartbeats(), 1, 'quiet for half the interval after the last batch: a heartbeat');
  t.equal(socket.sent.length, 21);
});

t.test('heartbeats go while the window is full and are acked in order with the batches', async (t) => {
  const socket = new FakeSocket();
  const clock = new FakeClock();
  const publisher = new Publisher(socket, { liveMs: 1000, clock, window: 1 });
  const batch = publisher.sendEncoded(['{"kind":"sport","si":1}']);
  t.equal(publisher.inFlight, 1, 'the window is full');
  clock.advance(500);
  t.equal(socket.sent.length, 2, 'a service slow to ack still hears from the publisher');
  socket.ack(0);
  socket.ack(1);
  t.match(await batch, { status: 1 });
  t.equal(publisher.inFlight, 0);
  t.equal(publisher.failed, undefined, 'the heartbeat\'s ack matched in order');
});

t.test('none while the source is not current: the service then lets the markets go stale', async (t) => {
  const { clock, source, heartbeats } = setUp(1000, { current: false });
  clock.advance(5000);
  t.equal(heartbeats(), 0, 'a live adapter whose exchange went quiet does not vouch for its prices');
  source.current = true;
  clock.advance(125);
  t.equal(heartbeats(), 1, 'once the source is current again, at the next tick');
});

t.test('none once the connection failed or was closed', async (t) => {
  const { socket, clock, publisher, heartbeats } = setUp(1000);
  socket.listener!.message('not json');
  t.match(publisher.failed, { message: /not JSON/ });
  const before = socket.sent.length;
  clock.advance(5000);
  t.equal(socket.sent.length, before, 'nothing after the failure');
  const closed = setUp(1000);
  await closed.publisher.close();
  closed.clock.advance(5000);
  t.equal(closed.heartbeats(), 0, 'nothing after close');
  t.equal(heartbeats(), 0);
});
