/**
 * Whole REST answers kept as bytes while the read model stands, within one byte budget whatever
 * clients ask: the oldest overwritten first, everything dropped when the model changes, an answer
 * too large for the ring built for its request alone, and raw queries remembered within their share.
 */
import t from 'tap';
import { AnswerCache, Pieces } from '../../src/http/cache.js';

const answer = (text: string) => new Pieces().add(Buffer.from(text));
const bytes = (kept: ReturnType<AnswerCache['put']>) => (Buffer.isBuffer(kept) ? kept : kept.view!).toString();

t.test('an answer kept for its version of the model; a new version drops them all', async (t) => {
  const cache = new AnswerCache(64 * 1024);
  t.equal(cache.get('a', 1), undefined);
  t.equal(bytes(cache.put('a', 1, new Pieces().add('{"data":').add(Buffer.from('[1]')).add('}'))), '{"data":[1]}', 'strings and bytes put together');
  t.equal(cache.get('a', 1)?.view?.toString(), '{"data":[1]}');
  t.equal(cache.get('a', 2), undefined, 'the model changed');
  t.equal(cache.get('a', 2), undefined, 'and it stays dropped');
});

t.test('the ring overwrites the oldest first; the bytes held never pass the budget', async (t) => {
  // 64 KiB: a ring of 48 KiB, 10 KB answers.
  const cache = new AnswerCache(64 * 1024);
  cache.get('k0', 1);
  const first = cache.put('k0', 1, answer('x'.repeat(10_000)));
  t.notOk(Buffer.isBuffer(first), 'kept');
  for (let i = 1; i < 20; i++) cache.put(`k${i}`, 1, answer(String(i % 10).repeat(10_000)));
  t.equal(cache.get('k0', 1), undefined, 'the oldest went');
  t.equal(Buffer.isBuffer(first) ? 'bytes' : first.view, undefined, 'and its view, whose bytes another answer took');
  t.equal(cache.get('k19', 1)?.view?.toString(), '9'.repeat(10_000), 'the newest is whole');
  const held = Array.from({ length: 20 }, (_, i) => cache.get(`k${i}`, 1)).filter(Boolean).length;
  t.ok(held * 10_000 <= 48 * 1024, `${held} answers held: within the ring`);
});

t.test('an answer over a quarter of the ring is built for its request alone', async (t) => {
  const cache = new AnswerCache(64 * 1024);
  cache.get('small', 1);
  cache.put('small', 1, answer('s'));
  const big = cache.put('big', 1, answer('b'.repeat(13_000)));
  t.ok(Buffer.isBuffer(big), 'bytes for this answer, not kept');
  t.equal(bytes(big), 'b'.repeat(13_000));
  t.equal(cache.get('big', 1), undefined);
  t.equal(cache.get('small', 1)?.view?.toString(), 's', 'nothing evicted for it');
});

t.test('raw queries map to their answers within their share, the oldest forgotten first', async (t) => {
  const cache = new AnswerCache(64 * 1024);
  cache.get('eid=1', 1);
  const kept = cache.put('eid=1', 1, answer('[1]'));
  const aliases = cache.aliases(1);
  if (Buffer.isBuffer(kept)) return t.fail('kept');
  aliases.set('eid=1&x=y', kept);
  t.equal(aliases.get('eid=1&x=y'), kept);
  for (let i = 0; i < 100; i++) aliases.set(`eid=1&pad=${i}`, kept);
  t.equal(aliases.get('eid=1&x=y'), undefined, 'the oldest forgotten within the budget');
  t.equal(aliases.get('eid=1&pad=99'), kept);
});
