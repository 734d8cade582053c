/**
 * A batch as the ingest queues count it: by what its items hold once read (estimated from their
 * runners and price levels), or its size on the wire when that is more, so a key's queue of a few
 * MiB cannot hold hundreds of MB once read; a message is judged at what it may hold before it is read.
 */
import t from 'tap';
import { batchOf, HELD_PER_WIRE_BYTE, MOST_HELD_PER_JSON_BYTE, readBytes, type ReadItems } from '../../src/ingest/batch.js';

const level = (p: number): [number, number] => [p, 10];
const odds = (i: number, runners: number, levels: number) => ({
  i, where: `item ${i}`, mid: `1.${i}`,
  read: {
    late: false,
    image: {
      marketId: `1.${i}`, sourceTime: 1, status: 'OPEN', inPlay: false,
      runners: Array.from({ length: runners }, (_, k) => ({ runnerId: k + 1, status: 'ACTIVE', back: Array.from({ length: levels }, (_, j) => level(2 + j / 100)), lay: Array.from({ length: levels }, (_, j) => level(3 + j / 100)) })),
    },
  },
}) as ReadItems['odds'][number];

t.test('odds count by their runners and levels, far past their wire size once they are large', async (t) => {
  const small: ReadItems = { count: 1, reference: [], odds: [odds(0, 1, 1)] };
  t.equal(batchOf(1, 10_000, small).bytes, 10_000, 'a small batch: its wire size, which is more');
  const big: ReadItems = { count: 2, reference: [], odds: [odds(0, 150, 10), odds(1, 150, 10)] };
  const held = batchOf(2, 10, big).bytes;
  t.ok(held > 2 * 150 * 21 * 90, `300 runners of 20 levels each: ${held} bytes held`);
  t.equal(batchOf(3, 10, { ...big, odds: [...big.odds, odds(2, 150, 10)], count: 3 }).bytes > held, true, 'more runners, more held');
});

t.test('a batch refused unread holds nothing but its wire; a message is judged at eight times its size before it is read', async (t) => {
  t.equal(batchOf(4, 512, { refusal: { code: 'LIMIT', message: 'x' } as never }).bytes, 512);
  t.equal(readBytes(1 << 20), HELD_PER_WIRE_BYTE << 20);
  t.equal(HELD_PER_WIRE_BYTE, 8);
});

t.test('the densest JSON, ladders of whole prices, counts past eight times its wire but never past the share the bounds are announced at', async (t) => {
  const runners = 40;
  const levels = 10;
  const item = odds(0, runners, levels);
  const image = (item.read as { image: { runners: { runnerId: number; back: [number, number][]; lay: [number, number][] }[] } }).image;
  for (const r of image.runners) {
    r.back = Array.from({ length: levels }, (_, j) => [2 + j, 1]);
    r.lay = Array.from({ length: levels }, (_, j) => [20 + j, 1]);
  }
  const wire = Buffer.byteLength(JSON.stringify({ id: 1, data: [{ kind: 'odds', mid: '1.0', ts: 1, r: image.runners.map((r) => ({ rid: r.runnerId, b: r.back, l: r.lay })) }] }));
  const counted = batchOf(1, wire, { count: 1, reference: [], odds: [item] }).bytes;
  t.ok(counted > HELD_PER_WIRE_BYTE * wire, `${wire} bytes on the wire counted ${counted}: more than eight times`);
  t.ok(counted <= MOST_HELD_PER_JSON_BYTE * wire, `within ${MOST_HELD_PER_JSON_BYTE} times, what the handshake's byte bounds assume`);
});
