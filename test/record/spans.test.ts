/**
 * A socket's ledger replayed (unit): spans on a market's topic, the seqs skipped while behind,
 * a market taken again another way, and where each market stood after the last event.
 */
import t from 'tap';
import { LedgerReplay, type LedgerEvent } from '../../src/record/spans.js';

const how = { variant: 'j0.0', depth: 0, conflate: 0, delta: false };
const ev = (at: number, op: string, body: Record<string, unknown>): LedgerEvent => ({ at, op, body });

t.test('take, behind, caught, drop: two spans and the skip between', async (t) => {
  const r = new LedgerReplay();
  for (const e of [
    ev(1, 'open', {}),
    ev(2, 'take', { mid: 'm', ...how, epoch: 'e', seq: 5, sent: true, behind: false }),
    ev(3, 'behind', { seqs: [['m', 'e', 9]] }),
    ev(4, 'caught', { seqs: [['m', 'e', 14]] }),
    ev(5, 'drop', { seqs: [['m', 'e', 20]] }),
  ]) r.apply(e);
  const m = r.markets.get('m')!;
  t.same(m.spans.map((s) => [s.epoch, s.from, s.to, s.start, s.end]), [['e', 5, 9, 2, 3], ['e', 14, 20, 4, 5]]);
  t.same(m.skipped, [{ epoch: 'e', from: 10, to: 13, start: 3, end: 4 }]);
  t.equal(r.now.size, 0, 'dropped: nothing held');
});

t.test('caught up with the very next image: nothing skipped; still behind at the end: where it stood', async (t) => {
  const r = new LedgerReplay();
  r.apply(ev(1, 'take', { mid: 'm', ...how, epoch: 'e', seq: 1, sent: true, behind: false }));
  r.apply(ev(2, 'behind', { seqs: [['m', 'e', 3]] }));
  r.apply(ev(3, 'caught', { seqs: [['m', 'e', 4]] }));
  r.apply(ev(4, 'behind', { seqs: [['m', 'e', 6]] }));
  t.same(r.markets.get('m')!.skipped, []);
  t.match(r.now.get('m'), { behind: { at: 4, epoch: 'e', seq: 6 } });
});

t.test('taken again another way: the old span ends where the new one starts', async (t) => {
  const r = new LedgerReplay();
  r.apply(ev(1, 'take', { mid: 'm', ...how, epoch: 'e', seq: 1, sent: true, behind: false }));
  r.apply(ev(2, 'take', { mid: 'm', ...how, variant: 'j0.500', conflate: 500, epoch: 'e', seq: 4, sent: true, behind: false }));
  r.apply(ev(3, 'close', { code: 1000, seqs: [['m', null, null]] }));
  t.same(r.markets.get('m')!.spans.map((s) => [s.variant, s.from, s.to, s.end]), [['j0.0', 1, 4, 2], ['j0.500', 4, null, 3]]);
});
