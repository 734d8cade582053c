/**
 * The board's logic without a browser: events in the order a punter scans them, what an event's
 * state says, what a result says in words, and the delay figure's fixed-size ring.
 */
import t from 'tap';
import { Delay } from '../../src/web/delay.js';
import { eventState, ordered } from '../../src/web/nav.js';
import { resultText } from '../../src/web/results.js';
import type { WireEvent } from '../../src/refdata/wire.js';

const ev = (eid: number, st: string, ip: boolean, go: boolean) => ({ eid, st, ip, go }) as unknown as WireEvent;

t.test('events: in play first, then upcoming by start, then ended, latest first', async (t) => {
  const events = [
    ev(1, '2030-01-01T12:00:00Z', false, true), ev(2, '2030-01-02T12:00:00Z', false, false), ev(3, '2030-01-01T10:00:00Z', true, false),
    ev(4, '2030-01-01T09:00:00Z', false, false), ev(5, '2030-01-01T13:00:00Z', false, true), ev(6, '2030-01-01T09:00:00Z', false, false),
  ];
  t.same(ordered(events).map((e) => e.eid), [3, 4, 6, 2, 5, 1], 'ties by id');
  t.same(events.map((e) => e.eid), [1, 2, 3, 4, 5, 6], 'the list given is left as it was');
  t.same(eventState(events[0]), { state: 'done', text: 'Ended' });
  t.same(eventState(events[2]), { state: 'live', text: 'In play' });
  t.equal(eventState(events[1]).state, 'soon');
});

t.test('a result in words: the outcome named, abandoned, recalled', async (t) => {
  const name = (res: string) => ({ '101': 'England' })[res] ?? `#${res}`;
  t.equal(resultText({ res: '101', rt: false, ia: false }, name), 'England');
  t.equal(resultText({ res: '', rt: true, ia: false }, name), 'Result recalled');
  t.equal(resultText({ res: 'Abandoned', rt: false, ia: true }, name), 'Abandoned');
  t.equal(resultText({ res: 'rain', rt: false, ia: true }, name), 'Abandoned (rain)');
  t.equal(resultText({ res: '', rt: false, ia: false }, name), '');
});

t.test('the delay: the median of the last samples only, in a ring of fixed size', async (t) => {
  const d = new Delay(4);
  t.equal(d.p50(), undefined, 'none before the first sample');
  d.add(10);
  t.equal(d.p50(), 10);
  d.add(30);
  t.equal(d.p50(), 20, 'an even count: the mean of the middle two');
  for (const ms of [1000, 1000, 1000, 1000]) d.add(ms);
  t.equal(d.p50(), 1000, 'the old samples gone');
});
