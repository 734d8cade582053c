import t from 'tap';
import { BATCH_LIMITS, Batcher } from '../../src/exchange/batch.js';

/** Cuts encoded items into batches as the outbox does: a new batch wherever one does not fit. */
function cut(items: [string, boolean][]): string[][] {
  const b = new Batcher();
  const out: string[][] = [];
  for (const [json, feed] of items) {
    if (!b.fits(json, feed)) out.push(b.take());
    b.add(json, feed);
  }
  return b.size ? [...out, b.take()] : out;
}
const odds = (n: number): [string, boolean] => [`{"kind":"odds","mid":"1.${n}"}`, true];
const stale = (n: number): [string, boolean] => [`{"kind":"stale","mid":"1.${n}","why":"late"}`, true];
const market = (n: number): [string, boolean] => [`{"kind":"market","mid":"1.${n}"}`, false];
const kinds = (batches: string[][]) => batches.map((b) => b.map((j) => (JSON.parse(j) as { kind: string }).kind));

t.test('reference items then the feed (odds, stale) share a batch; a reference item after the feed starts the next one', async (t) => {
  t.same(kinds(cut([market(1), odds(1), stale(2), market(2), market(3), odds(3)])), [['market', 'odds', 'stale'], ['market', 'market', 'odds']]);
});

t.test('at most BATCH_LIMITS.items items and BATCH_LIMITS.bytes bytes a batch', async (t) => {
  const many = cut(Array.from({ length: BATCH_LIMITS.items * 2 + 1 }, (_, i) => odds(i)));
  t.same(many.map((b) => b.length), [BATCH_LIMITS.items, BATCH_LIMITS.items, 1]);
  const big: [string, boolean] = [`{"kind":"odds","pad":"${'x'.repeat(BATCH_LIMITS.bytes / 3)}"}`, true];
  t.same(cut([big, big, big, big]).map((b) => b.length), [2, 2]);
  t.same(new Batcher().take(), [], 'nothing to take from an empty batcher');
});
