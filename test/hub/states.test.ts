/**
 * What the hub keeps of each market besides its book, and how it names the ways a socket takes a
 * market: the last market, result and freshness frames with the revision each changed at (a socket
 * that fell behind is sent exactly what changed since), the images queued for a turn's publish, and
 * variants and conflation presets.
 */
import t from 'tap';
import { MarketStates } from '../../src/hub/states.js';
import { PublishBatch } from '../../src/hub/publish-batch.js';
import { CONFLATE_PRESETS, conflatePreset, FEED_TOPIC, topicOf, variant } from '../../src/hub/variant.js';
import type { BookEntry } from '../../src/odds/book.js';

t.test('states: the last frame of each kind per market, and exactly what changed since a revision, freshness last', async (t) => {
  const s = new MarketStates();
  s.record({ op: 'freshness', mid: 'a', live: false, why: 'late', at: 1 });
  const rev = s.revision;
  s.record({ op: 'market', mid: 'a', s: false, go: false, rt: false });
  s.record({ op: 'result', mid: 'a', mt: 'bookmaker', res: '1', rt: false, ia: false });
  t.same(s.since('a', rev).map((m) => m.op), ['market', 'result'], 'what changed after the revision, not the freshness before it');
  t.same(s.since('a', 0).map((m) => m.op), ['market', 'result', 'freshness'], 'state first, freshness last');
  t.match(s.stale('a'), { why: 'late' });
  s.record({ op: 'freshness', mid: 'a', live: true, at: 2 });
  t.equal(s.stale('a'), undefined, 'live: nothing stale to follow an image');
  s.forget('a');
  t.same(s.since('a', 0), [], 'forgotten with the market');
});

t.test('states: where a market stands is its state and result unless they say nothing an open market would', async (t) => {
  const s = new MarketStates();
  const open = { op: 'market', mid: 'a', s: true, go: false, rt: false } as const;
  const unsettled = { op: 'result', mid: 'a', mt: 'match-odd', res: '', rt: false, ia: false } as const;
  s.record(open);
  s.record(unsettled);
  s.record({ op: 'freshness', mid: 'a', live: false, why: 'late', at: 1 });
  t.same(s.current('a'), [], 'active, not concluded, not recalled, no terms, unsettled: nothing beside the image (freshness is told before it)');
  t.same(s.current('x'), [], 'a market never told of: nothing');
  for (const market of [{ s: false }, { go: true }, { rt: true }, { terms: { bd: 0 } }]) {
    s.record({ ...open, ...market });
    t.same(s.current('a'), [{ ...open, ...market }], `its state when it says ${JSON.stringify(market)}`);
  }
  s.record(open);
  for (const result of [{ res: '1' }, { rt: true }, { ia: true }, { cert: 'provisional' as const }, { at: 5 }, { rs: [{ rid: 1, st: 'LOSER' as const }] }]) {
    s.record({ ...unsettled, ...result });
    t.same(s.current('a'), [{ ...unsettled, ...result }], `its result when it says ${JSON.stringify(result)}`);
  }
  s.record({ ...open, s: false });
  t.same(s.current('a').map((m) => m.op), ['market', 'result'], 'state first, then result');
});

t.test('the publish batch: queued in order, the first add asks for a drain, taken whole', async (t) => {
  const b = new PublishBatch();
  const entry = (mid: string) => ({ marketId: mid }) as BookEntry;
  t.equal(b.add(entry('a')), true, 'the first: its owner schedules a drain');
  t.equal(b.add(entry('b')), false);
  t.ok(b.holds('a'));
  t.same(b.drain().map((e) => e.marketId), ['a', 'b']);
  t.equal(b.size, 0);
  t.notOk(b.holds('a'));
});

t.test('variants: one key per way of taking a market; any interval runs at the smallest preset at or above it', async (t) => {
  t.equal(conflatePreset(0), 0);
  t.equal(conflatePreset(1), 100);
  t.equal(conflatePreset(150), 200);
  t.equal(conflatePreset(1000), 1000);
  t.equal(conflatePreset(10 ** 9), CONFLATE_PRESETS.at(-1));
  t.same(variant('proto', 3, 750, true), { key: 'p3.1000d', format: 'proto', depth: 3, conflate: 1000, delta: true });
  t.equal(variant('json').key, 'j0.0');
  t.equal(topicOf(variant('json'), '1.5'), 'j0.0/1.5');
  t.notOk(Object.values(FEED_TOPIC).some((topic) => /^[jp]\d/.test(topic)), 'the feed topics never meet a market\'s');
});
