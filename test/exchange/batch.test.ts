import t from 'tap';
import { BATCH_LIMITS, Batcher } from '../../src/exchange/batch.js';
import type { IngestItemInput } from '../../src/odds/messages.js';

const odds = (n: number): IngestItemInput => ({ kind: 'odds', mid: `1.${n}` });
const market = (n: number): IngestItemInput => ({ kind: 'market', mid: `1.${n}` });

function cut(items: IngestItemInput[]): string[][] {
  const b = new Batcher();
  const out = items.map((i) => b.add(i)).filter((x): x is string[] => x !== undefined);
  const last = b.take();
  return last ? [...out, last] : out;
}

t.test('reference items then odds share a batch; a reference item after odds starts the next one', async (t) => {
  const batches = cut([market(1), odds(1), odds(2), market(2), market(3), odds(3)]);
  t.same(batches.map((b) => b.map((j) => (JSON.parse(j) as { kind: string }).kind)), [['market', 'odds', 'odds'], ['market', 'market', 'odds']]);
  t.same(JSON.parse(`[${batches[0].join(',')}]`), [market(1), odds(1), odds(2)], 'items encoded as sent');
});

t.test('at most BATCH_LIMITS.items items and BATCH_LIMITS.bytes bytes a batch', async (t) => {
  const many = cut(Array.from({ length: BATCH_LIMITS.items * 2 + 1 }, (_, i) => odds(i)));
  t.same(many.map((b) => b.length), [BATCH_LIMITS.items, BATCH_LIMITS.items, 1]);
  const big: IngestItemInput = { kind: 'odds', pad: 'x'.repeat(BATCH_LIMITS.bytes / 3) };
  t.same(cut([big, big, big, big]).map((b) => b.length), [2, 2]);
  t.equal(new Batcher().take(), undefined, 'nothing to take from an empty batcher');
});
