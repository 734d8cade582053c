/**
 * A change the exchange split into segments, joined back whole before anyone reads it: the header
 * of the last segment (its clk) over the first's, every market change in order; a change that
 * never ends is refused at its bounds, and a segment out of place breaks the connection's stream.
 */
import t from 'tap';
import { SegmentJoiner } from '../../src/exchange/live/segments.js';
import type { MarketChangeMessage } from '../../src/exchange/stream.js';
import { FakeClock } from '../helpers/clock.js';

const seg = (segmentType: MarketChangeMessage['segmentType'], ids: string[], clk?: string) =>
  ({ op: 'mcm', pt: 1, segmentType, clk, mc: ids.map((id) => ({ id })) }) as MarketChangeMessage;

t.test('segments joined into one message, the last one\'s header kept, timed from its start', async (t) => {
  const clock = new FakeClock();
  const j = new SegmentJoiner(10, 10_000, clock);
  t.same(j.add(seg(undefined, ['1.1'], 'a'), 10), seg(undefined, ['1.1'], 'a'), 'an unsegmented message as it is');
  t.equal(j.add(seg('SEG_START', ['1.1']), 10), undefined);
  t.equal(j.started, clock.now(), 'started on the clock it was given');
  t.equal(j.add(seg('SEG', ['1.2']), 10), undefined);
  const whole = j.add(seg('SEG_END', ['1.3'], 'z'), 10)!;
  t.same(whole.mc!.map((c) => c.id), ['1.1', '1.2', '1.3']);
  t.equal(whole.clk, 'z', 'the clk comes with the last segment');
  t.notOk('segmentType' in whole);
  t.equal(j.started, undefined, 'nothing under way');
});

t.test('bounded: too many market changes or bytes refuse the change and start afresh', async (t) => {
  const j = new SegmentJoiner(3, 100, new FakeClock());
  j.add(seg('SEG_START', ['1.1', '1.2']), 10);
  t.throws(() => j.add(seg('SEG', ['1.3', '1.4']), 10), { code: 'TOO_MANY_SEGMENTS' });
  t.equal(j.started, undefined);
  j.add(seg('SEG_START', ['1.1']), 60);
  t.throws(() => j.add(seg('SEG', ['1.2']), 60), { code: 'SEGMENTS_TOO_LARGE', message: /passed 100 bytes without its SEG_END/ });
});

t.test('a segment out of place is a broken stream', async (t) => {
  const j = new SegmentJoiner(10, 10_000, new FakeClock());
  t.throws(() => j.add(seg('SEG_END', ['1.1']), 10), /SEG_END arrived without a SEG_START/);
  j.add(seg('SEG_START', ['1.1']), 10);
  t.throws(() => j.add(seg(undefined, ['1.2']), 10), /unsegmented message arrived inside a segmented change/);
});
