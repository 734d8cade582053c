import t from 'tap';
import { FreshnessBook } from '../../src/client/freshness.js';

/** The client's freshness book alone: what the server said, and what the client knows without a connection. */
t.test('every market is live until told; the server\'s word is kept; a repeat changes nothing', async (t) => {
  const f = new FreshnessBook();
  t.same(f.get('1.1'), { mid: '1.1', live: true });
  t.same(f.apply({ op: 'freshness', mid: '1.1', live: false, why: 'late', at: 5 }), { mid: '1.1', live: false, why: 'late', since: 5 });
  t.equal(f.apply({ op: 'freshness', mid: '1.1', live: false, why: 'late', at: 9 }), undefined, 'still late: no change');
  t.same(f.apply({ op: 'freshness', mid: '1.1', live: false, why: 'publisher', at: 10 }), { mid: '1.1', live: false, why: 'publisher', since: 10 });
  t.same(f.apply({ op: 'freshness', mid: '1.1', live: true, at: 11 }), { mid: '1.1', live: true });
  t.equal(f.apply({ op: 'freshness', mid: '1.1', live: true, at: 12 }), undefined, 'live already');
});

t.test('without a connection every market held is stale; a resubscribe makes live only those stale for that reason', async (t) => {
  const f = new FreshnessBook();
  f.apply({ op: 'freshness', mid: '1.3', live: false, why: 'unreliable', at: 1 });
  t.same(f.disconnected(['1.1', '1.2'], 50).map((s) => s.mid).sort(), ['1.1', '1.2', '1.3'], 'the stale one too: nothing is known without a connection');
  t.same(f.disconnected(['1.1'], 60), [], 'told once');
  t.same(f.get('1.3'), { mid: '1.3', live: false, why: 'disconnected', since: 50 });
  t.same(f.resubscribed(['1.1']), [{ mid: '1.1', live: true }]);
  t.same(f.get('1.2').live, false, 'a market not answered yet stays stale');
  f.apply({ op: 'freshness', mid: '1.2', live: false, why: 'bus', at: 70 });
  t.same(f.resubscribed('all'), [{ mid: '1.3', live: true }], 'a filter\'s answer: every market stale for want of a connection, not one the server said is stale');
  t.match(f.get('1.2'), { why: 'bus' });
  f.delete('1.2');
  t.same(f.get('1.2'), { mid: '1.2', live: true }, 'a market let go is forgotten');
});
