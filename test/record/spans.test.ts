/**
 * A socket's ledger replayed (unit): spans on a market's topic, the seqs skipped while it was off
 * it, a market taken again another way, the stretches it was told `behind`, and where each market
 * stood after the last event.
 */
import t from 'tap';
import { LedgerReplay, type LedgerEvent } from '../../src/record/spans.js';

const how = { variant: 'j0.0', depth: 0, conflate: 0, delta: false };
const ev = (at: number, op: string, body: Record<string, unknown>): LedgerEvent => ({ at, op, body });

t.test('take, join, owe, join, drop: two spans and the skip between', async (t) => {
  const r = new LedgerReplay();
  for (const e of [
    ev(1, 'open', {}),
    ev(2, 'take', { ...how, seqs: [['m', null, null]] }),
    ev(2, 'join', { seqs: [['m', 'e', 5, true]] }),
    ev(3, 'owe', { seqs: [['m', 'e', 9]] }),
    ev(4, 'join', { seqs: [['m', 'e', 14, true]] }),
    ev(5, 'drop', { seqs: [['m', 'e', 20]] }),
  ]) r.apply(e);
  const m = r.markets.get('m')!;
  t.same(m.spans.map((s) => [s.epoch, s.from, s.sent, s.to, s.start, s.end]), [['e', 5, true, 9, 2, 3], ['e', 14, true, 20, 4, 5]]);
  t.same(m.skipped, [{ epoch: 'e', from: 10, to: 13, start: 3, end: 4 }]);
  t.equal(r.now.size, 0, 'dropped: nothing held');
});

t.test('joined again with the very next image, or holding the one it had: nothing skipped; owed at the end: where it stood', async (t) => {
  const r = new LedgerReplay();
  r.apply(ev(1, 'take', { ...how, seqs: [['m', null, null]] }));
  r.apply(ev(1, 'join', { seqs: [['m', 'e', 1, true]] }));
  r.apply(ev(2, 'owe', { seqs: [['m', 'e', 3]] }));
  r.apply(ev(3, 'join', { seqs: [['m', 'e', 4, true]] }));
  r.apply(ev(4, 'owe', { seqs: [['m', 'e', 6]] }));
  r.apply(ev(5, 'join', { seqs: [['m', 'e', 6, false]] }));
  r.apply(ev(6, 'owe', { seqs: [['m', 'e', 8]] }));
  t.same(r.markets.get('m')!.skipped, []);
  t.same(r.markets.get('m')!.spans.map((s) => [s.from, s.sent, s.to]), [[1, true, 3], [4, true, 6], [6, false, 8]], 'the third span was not sent the image it held');
  t.match(r.now.get('m'), { owed: { at: 6, epoch: 'e', seq: 8 } });
});

t.test('a resume holds what it said, and what a later image skips of it is not this socket\'s to skip', async (t) => {
  const r = new LedgerReplay();
  r.apply(ev(1, 'take', { ...how, seqs: [['m', 'e', 3]] }));
  t.match(r.now.get('m'), { owed: { at: 1, epoch: 'e', seq: 3 } }, 'owed, holding what it resumed with');
  r.apply(ev(2, 'join', { seqs: [['m', 'e', 7, true]] }));
  t.same(r.markets.get('m')!.skipped, []);
});

t.test('taken again another way: the old span ends where it left the topic, and what it missed until it joined is skipped', async (t) => {
  const r = new LedgerReplay();
  r.apply(ev(1, 'take', { ...how, seqs: [['m', null, null]] }));
  r.apply(ev(1, 'join', { seqs: [['m', 'e', 1, true]] }));
  r.apply(ev(2, 'take', { ...how, variant: 'j0.500', conflate: 500, seqs: [['m', 'e', 4]] }));
  r.apply(ev(2, 'join', { seqs: [['m', 'e', 6, true]] }));
  r.apply(ev(3, 'close', { code: 1000, seqs: [['m', null, null]] }));
  const m = r.markets.get('m')!;
  t.same(m.spans.map((s) => [s.variant, s.from, s.to, s.end]), [['j0.0', 1, 4, 2], ['j0.500', 6, null, 3]]);
  t.same(m.skipped, [{ epoch: 'e', from: 5, to: 5, start: 2, end: 2 }]);
});

t.test('told behind, then live: one stretch; told behind and dropped: it ends with the drop', async (t) => {
  const r = new LedgerReplay();
  r.apply(ev(1, 'take', { ...how, seqs: [['a', null, null], ['b', null, null]] }));
  r.apply(ev(1, 'join', { seqs: [['a', 'e', 1, true], ['b', 'e', 1, true]] }));
  r.apply(ev(2, 'owe', { seqs: [['a', 'e', 2], ['b', 'e', 2]] }));
  r.apply(ev(3, 'behind', { mids: [['a', 2], ['b', 2]] }));
  t.match(r.now.get('a'), { behind: { since: 2, start: 3, end: null } }, 'a market told behind is stale on the screen');
  r.apply(ev(4, 'join', { seqs: [['a', 'e', 5, true], ['b', 'e', 5, true]] }));
  t.match(r.now.get('a'), { behind: { since: 2, start: 3 } }, 'on its topic again, still behind until told live');
  r.apply(ev(5, 'drop', { seqs: [['b', 'e', 6]] }));
  r.apply(ev(6, 'live', { mids: ['a'], stale: [] }));
  t.same(r.markets.get('a')!.behind, [{ since: 2, start: 3, end: 6 }]);
  t.same(r.markets.get('b')!.behind, [{ since: 2, start: 3, end: 5 }]);
  t.equal(r.now.get('a')!.behind, undefined, 'live again');
});
