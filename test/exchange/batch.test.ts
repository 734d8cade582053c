import t from 'tap';
import { BATCH_LIMITS, Batcher, type BatchLimits } from '../../src/exchange/batch.js';

/** An encoded item: its JSON, and the reference group it belongs to (none for the feed). */
type Item = [string, string | undefined];

/** Cuts encoded items into batches as the outbox does: a new batch wherever one does not fit. */
function cut(items: Item[], limits?: BatchLimits): string[][] {
  const b = new Batcher(limits);
  const out: string[][] = [];
  for (const [json, group] of items) {
    const bytes = Buffer.byteLength(json);
    if (!b.fits(bytes, group)) out.push(b.drain());
    b.add(json, bytes, group);
  }
  return b.size ? [...out, b.drain()] : out;
}
const odds = (n: number): Item => [`{"kind":"odds","mid":"1.${n}"}`, undefined];
const stale = (n: number): Item => [`{"kind":"stale","mid":"1.${n}","why":"late"}`, undefined];
const event = (n: number): Item => [`{"kind":"event","eid":${n}}`, `shared 1.${n}`];
const market = (n: number): Item => [`{"kind":"market","mid":"1.${n}"}`, `own 1.${n}`];
const result = (n: number): Item => [`{"kind":"result","mid":"1.${n}"}`, `own 1.${n}`];
const kinds = (batches: string[][]) => batches.map((b) => b.map((j) => (JSON.parse(j) as { kind: string }).kind));

t.test('the feed (odds, stale) shares batches; each market\'s reference rows, and the rows its definition shares, go in batches of their own', async (t) => {
  t.same(kinds(cut([event(1), market(1), odds(1), stale(2), odds(3), event(2), market(2), market(3), result(3), odds(3)])), [
    ['event'], ['market'], ['odds', 'stale', 'odds'], ['event'], ['market'], ['market', 'result'], ['odds'],
  ]);
});

t.test('at most the limits\' items and bytes a batch, counted as UTF-8 on the wire', async (t) => {
  const many = cut(Array.from({ length: BATCH_LIMITS.items * 2 + 1 }, (_, i) => odds(i)));
  t.same(many.map((b) => b.length), [BATCH_LIMITS.items, BATCH_LIMITS.items, 1]);
  const big: Item = [`{"kind":"odds","pad":"${'x'.repeat(BATCH_LIMITS.bytes / 3)}"}`, undefined];
  t.same(cut([big, big, big, big]).map((b) => b.length), [2, 2]);
  t.same(cut(Array.from({ length: 7 }, (_, i) => odds(i)), { items: 3, bytes: 1e6 }).map((b) => b.length), [3, 3, 1], 'the items a service announced');
  // 60 characters of which 20 take three bytes each: 100 bytes, where counting characters would say 60.
  const wide: Item = [`{"kind":"odds","na":"${'€'.repeat(20)}"}`.padEnd(60, ' '), undefined];
  t.same(cut([wide, wide, wide], { items: 10, bytes: 210 }).map((b) => b.length), [2, 1], 'bytes, not characters');
  t.same(cut([big], { items: 1, bytes: 10 }).map((b) => b.length), [1], 'one item larger than a batch goes alone');
  t.same(new Batcher().drain(), [], 'nothing to drain from an empty batcher');
});
