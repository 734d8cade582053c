/**
 * What the publisher keeps in flight, over a fake socket and a clock the test moves: within the
 * bounds the service announced (batches and bytes, a heartbeat's room kept spare), one batch at a
 * time when it announced none, and a batch the service refused for a limit anyway sent again once
 * the batches before it are answered, never dropped.
 */
import t from 'tap';
import { Publisher, type Ack } from '../../src/exchange/publisher.js';
import type { IngestLimits } from '../../src/ingest/limits.js';
import { FakeClock, FakeSocket } from './fake-ingest.js';

const LIMITS: IngestLimits = { maxInFlight: 4, queueBytes: 1000, keyQueueBytes: 800, maxItems: 3, maxMessageBytes: 600 };
/** An item whose batch `{"id":N,"data":[...]}` is about 100 bytes on the wire. */
const ITEM = `{"kind":"odds","mid":"1.1","pad":"${'x'.repeat(50)}"}`;
const LIMIT = { code: 'LIMIT', message: '700 bytes of batches are already queued on this API key (the limit is 800); wait for their acks before sending more (this batch was not applied)' };

function setUp(limits?: IngestLimits) {
  const socket = new FakeSocket();
  const clock = new FakeClock();
  const publisher = new Publisher(socket, { liveMs: 60_000, clock, limits });
  const bytes = () => socket.sent.reduce((n, s) => n + Buffer.byteLength(s), 0);
  return { socket, clock, publisher, bytes };
}

/** Whether room() resolves before the current turn ends. */
async function roomNow(publisher: Publisher, bytes = 0): Promise<boolean> {
  let ok = false;
  void publisher.room(bytes).then(() => (ok = true), () => undefined);
  await new Promise((next) => setImmediate(next));
  return ok;
}

t.test('a service that announced nothing: one batch at a time, cut to the publisher\'s own sizes', async (t) => {
  const { socket, publisher } = setUp();
  t.same(publisher.batch, { items: 500, bytes: 512 * 1024 });
  t.ok(await roomNow(publisher, 100), 'room for the first');
  void publisher.sendEncoded([ITEM]);
  t.notOk(await roomNow(publisher, 100), 'none for a second until the first is answered');
  socket.ack(0);
  t.ok(await roomNow(publisher, 100));
});

t.test('within the announced bounds: batches one fewer than allowed, bytes within the connection\'s and the key\'s, a heartbeat\'s room spare', async (t) => {
  const { socket, clock, publisher, bytes } = setUp(LIMITS);
  t.same(publisher.batch, { items: 3, bytes: Math.floor((800 - 32) / 4) }, 'the service\'s items; a quarter of the smaller byte bound');
  t.equal(publisher.maxMessageBytes, 600);
  const size = Buffer.byteLength(`{"id":1,"data":[${ITEM}]}`);
  let sent = 0;
  while (await roomNow(publisher, size)) {
    void publisher.sendEncoded([ITEM]);
    sent++;
  }
  t.equal(sent, 3, `three of four batches (${size} bytes each)`);
  t.ok(bytes() <= 800 - 32, `${bytes()} bytes in flight: within the key's 800 and a heartbeat's room`);
  clock.advance(30_000);
  t.equal(socket.sent.length, 4, 'a heartbeat goes while the window is full');
  t.ok(bytes() <= 800, 'and stays within the bytes');
  socket.ack(0);
  t.notOk(await roomNow(publisher, size), 'the heartbeat counts as a batch in flight');
  socket.ack(1);
  t.ok(await roomNow(publisher, size), 'room again as batches are answered');
  const small = setUp({ ...LIMITS, queueBytes: 250 });
  void small.publisher.sendEncoded([ITEM]);
  t.ok(await roomNow(small.publisher, 100), 'a second batch within 250 bytes');
  void small.publisher.sendEncoded([ITEM]);
  t.notOk(await roomNow(small.publisher, 100), 'not a third: the connection\'s bound, less than its key\'s');
  t.ok(await roomNow(setUp({ ...LIMITS, queueBytes: 50 }).publisher, 5000), 'a connection holding nothing may always send one batch, as the service takes it');
});

t.test('a batch refused for a limit goes again once those before it are answered, in order, nothing new meanwhile; its caller sees only the final ack', async (t) => {
  const { socket, publisher } = setUp(LIMITS);
  const acks: (Ack | undefined)[] = [undefined, undefined, undefined];
  for (const i of [0, 1, 2]) void publisher.sendEncoded([ITEM.replace('1.1', `1.${i}`)]).then((a) => (acks[i] = a));
  socket.ack(0);
  socket.ack(1, LIMIT);
  await new Promise((next) => setImmediate(next));
  t.same(acks.map((a) => a?.status), [1, undefined, undefined], 'the refused batch is not answered to its caller');
  t.equal(publisher.inFlight, 2, 'still in flight');
  t.notOk(await roomNow(publisher, 10), 'nothing new goes while it waits');
  t.equal(socket.sent.length, 3, 'not sent again while a batch sent after it is in flight');
  socket.ack(2);
  t.equal(socket.sent.length, 4, 'sent again as soon as every batch sent before it is answered');
  t.match(JSON.parse(socket.sent[3]), { id: 4, data: [{ mid: '1.1' }] }, 'the same items, numbered anew');
  t.equal(publisher.resent, 1);
  socket.ack(3);
  await publisher.flush();
  t.same(acks.map((a) => a?.status), [1, 1, 1], 'every batch taken');
  t.ok(await roomNow(publisher, 10), 'room again');
});

t.test('refused again and again (another connection of the key holds its bytes): sent again after a growing pause, never dropped', async (t) => {
  const { socket, clock, publisher } = setUp(LIMITS);
  const ack = publisher.sendEncoded([ITEM]);
  socket.ack(0, LIMIT);
  t.equal(socket.sent.length, 2, 'the first time at once');
  socket.ack(1, LIMIT);
  t.equal(socket.sent.length, 2, 'refused again: it waits');
  clock.advance(25);
  t.equal(socket.sent.length, 3, 'then goes again');
  socket.ack(2, LIMIT);
  clock.advance(25);
  t.equal(socket.sent.length, 3, 'the pause grows');
  clock.advance(25);
  t.equal(socket.sent.length, 4);
  socket.ack(3);
  t.match(await ack, { status: 1 });
  t.equal(publisher.resent, 3);
  // Taken once: the next refusal goes again at once.
  void publisher.sendEncoded([ITEM]);
  socket.ack(4, LIMIT);
  t.equal(socket.sent.length, 6);
});

t.test('other refusals answer their caller; a heartbeat refused for a limit is not sent again', async (t) => {
  const { socket, clock, publisher } = setUp(LIMITS);
  const bad = publisher.sendEncoded(['{"kind":"sport","si":-1}']);
  socket.ack(0, { code: 'BAD_BODY', message: 'item 0 (sport -1): si must be a positive integer' });
  t.match(await bad, { status: 0, message: 'item 0 (sport -1): si must be a positive integer' });
  clock.advance(30_000);
  t.equal(socket.sent.length, 2, 'a heartbeat');
  socket.ack(1, LIMIT);
  t.equal(publisher.inFlight, 0, 'answered: the service heard it all the same');
  t.equal(socket.sent.length, 2, 'and not sent again');
});

t.test('a publisher that fails rejects the batches it held for sending again', async (t) => {
  const { socket, publisher } = setUp(LIMITS);
  const first = publisher.sendEncoded([ITEM]);
  const second = publisher.sendEncoded([ITEM]);
  socket.ack(0, LIMIT);
  socket.close();
  await t.rejects(first, { message: 'connection closed: code 1000' });
  await t.rejects(second, { message: 'connection closed: code 1000' });
});
