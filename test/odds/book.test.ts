import t from 'tap';
import { Book } from '../../src/odds/book.js';
import { decodeServerJson, decodeServerProto } from '../../src/odds/codec.js';
import type { OddsImage } from '../../src/odds/messages.js';

const img = (mid: string, price: number): OddsImage => ({ mid, ts: 1000, st: 'OPEN', ip: true, r: [{ rid: 1, st: 'ACTIVE', b: [[price, 10]], l: [[price + 0.02, 10]] }] });

t.test('seq rises by one per update of a market, independently per market', async (t) => {
  const book = new Book();
  t.same([book.apply(img('a', 2))!.seq, book.apply(img('a', 2.02))!.seq, book.apply(img('b', 3))!.seq, book.apply(img('a', 2.04))!.seq], [1, 2, 1, 3]);
});

t.test('an image ordered elsewhere keeps its seq, and an older one than held is dropped', async (t) => {
  const book = new Book();
  t.equal(book.apply(img('a', 2), 1, 40)!.seq, 40);
  t.equal(book.apply(img('a', 2.5), 2, 35), undefined, 'older seq dropped');
  t.equal(book.apply(img('a', 2.5), 2, 40), undefined, 'same seq dropped');
  t.equal(book.get('a')!.image.r[0].b[0][0], 2);
  t.equal(book.apply(img('a', 3), 3)!.seq, 41, 'local numbering continues from the held seq');
});

t.test('the newest image is the one kept, with its publish time', async (t) => {
  const book = new Book();
  book.apply(img('a', 2), 5000);
  book.apply(img('a', 2.5), 6000);
  const e = book.get('a')!;
  t.equal(e.image.r[0].b[0][0], 2.5);
  t.equal(e.pt, 6000);
  t.equal(book.size, 1);
});

t.test('each frame is encoded once per format and reused', async (t) => {
  const e = new Book().apply(img('a', 2))!;
  t.equal(e.frame('json'), e.frame('json'), 'same string');
  t.equal(e.frame('proto'), e.frame('proto'), 'same bytes object');
  t.equal(e.frame('json', true), e.frame('json', true));
});

t.test('frames carry the image with seq, pt and con in both formats', async (t) => {
  const e = new Book().apply(img('a', 2), 7000)!;
  const json = decodeServerJson(e.frame('json') as string);
  const proto = decodeServerProto(e.frame('proto') as Uint8Array);
  t.same(json, { op: 'odds', mid: 'a', seq: 1, ts: 1000, pt: 7000, st: 'OPEN', ip: true, con: false, r: img('a', 2).r });
  t.same(proto, json);
  t.equal((decodeServerJson(e.frame('json', true) as string) as { con: boolean }).con, true);
});
