import t from 'tap';
import { Book, newEpoch } from '../../src/odds/book.js';
import { isNewer } from '../../src/odds/order.js';
import { decodeServerJson, decodeServerProto } from '../../src/odds/codec.js';
import type { OddsMessage, WireOddsImage } from '../../src/odds/messages.js';
import { imageOf } from '../helpers/images.js';

const img = (mid: string, price: number): WireOddsImage => ({
  mid, ts: 1000, st: 'OPEN', ip: true,
  r: [{ rid: 1, st: 'ACTIVE', b: [[price, 10], [price - 0.01, 20], [price - 0.02, 30]], l: [[price + 0.02, 10]] }],
});
const E = 'e1';

t.test('within an epoch the higher seq wins; a different epoch replaces whatever is held', async (t) => {
  const book = new Book();
  t.equal(book.put({ epoch: E, seq: 40, publishTime: 1, image: imageOf(img('a', 2)) })!.seq, 40);
  t.equal(book.put({ epoch: E, seq: 35, publishTime: 2, image: imageOf(img('a', 2.5)) }), undefined, 'older seq dropped');
  t.equal(book.put({ epoch: E, seq: 40, publishTime: 2, image: imageOf(img('a', 2.5)) }), undefined, 'same seq dropped');
  t.equal(book.get('a')!.image.runners[0].back[0][0], 2);
  t.equal(book.put({ epoch: 'e2', seq: 1, publishTime: 3, image: imageOf(img('a', 3)) })!.seq, 1, 'a new epoch replaces, even with a lower seq');
  t.equal(book.get('a')!.epoch, 'e2');
  t.ok(isNewer(undefined, E, 1) && isNewer({ epoch: E, seq: 5 }, 'x', 1) && !isNewer({ epoch: E, seq: 5 }, E, 5));
});

t.test('local numbering rises by one per market within its epoch and starts at 1 in a new one', async (t) => {
  const book = new Book();
  const put = (mid: string, p: number, epoch = E) => book.put({ epoch, seq: book.next(mid, epoch), publishTime: 0, image: imageOf(img(mid, p)) })!.seq;
  t.same([put('a', 2), put('a', 2.02), put('b', 3), put('a', 2.04), put('a', 2.06, 'e2')], [1, 2, 1, 3, 1]);
});

t.test('epochs are short and never repeat', async (t) => {
  const seen = new Set(Array.from({ length: 1000 }, () => newEpoch('m')));
  t.equal(seen.size, 1000);
  t.ok([...seen].every((e) => e.length <= 16 && e.startsWith('m')));
});

t.test('each variant is encoded once and reused; a depth at or past the ladder is the full frame', async (t) => {
  const e = new Book().put({ epoch: E, seq: 1, publishTime: 0, image: imageOf(img('a', 2)) })!;
  t.equal(e.frame('json'), e.frame('json'), 'same string');
  t.equal(e.frame('proto'), e.frame('proto'), 'same bytes object');
  t.equal(e.frame('json', 'skipped'), e.frame('json', 'skipped'));
  t.equal(e.frame('json', 'none', 3), e.frame('json'), 'depth 3 of a 3-level ladder is the full frame');
  t.not(e.frame('json', 'none', 1), e.frame('json'));
  const one = decodeServerJson(e.frame('json', 'none', 1) as string);
  t.same(one.op === 'odds' && one.r[0].b, [[2, 10]], 'depth 1 keeps the best level only');
});

t.test('a frame cut to a depth keeps ltp and tv', async (t) => {
  const base = img('a', 2);
  const image = { ...base, tv: 900, r: base.r.map((r) => ({ ...r, ltp: 2.5, tv: 300 })) };
  const e = new Book().put({ epoch: E, seq: 1, publishTime: 0, image: imageOf(image) })!;
  for (const f of [decodeServerJson(e.frame('json', 'none', 1) as string), decodeServerProto(e.frame('proto', 'none', 1) as Uint8Array)]) {
    const m = f as OddsMessage;
    t.strictSame([m.tv, m.r.map((r) => [r.b.length, r.ltp, r.tv])], [900, base.r.map(() => [1, 2.5, 300])]);
  }
});

t.test('frames carry the image with epoch, seq, pt and the marks in both formats', async (t) => {
  const e = new Book().put({ epoch: E, seq: 1, publishTime: 7000, image: imageOf(img('a', 2)) })!;
  const json = decodeServerJson(e.frame('json') as string);
  const proto = decodeServerProto(e.frame('proto') as Uint8Array);
  t.same(json, { op: 'odds', mid: 'a', epoch: E, seq: 1, ts: 1000, pt: 7000, st: 'OPEN', ip: true, con: false, cf: false, r: img('a', 2).r });
  t.same(proto, json);
  t.equal((decodeServerJson(e.frame('json', 'skipped') as string) as { con: boolean }).con, true);
  t.equal((decodeServerProto(e.frame('proto', 'conflated') as Uint8Array) as { cf: boolean }).cf, true);
});
