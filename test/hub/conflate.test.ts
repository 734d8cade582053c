/**
 * Conflation as a queue per interval, without a clock: the broadcaster's timer for an interval
 * starts with its first deferred market and stops when an interval passes quiet; each market's updates are
 * counted once per interval; a market's `live` freshness frame waits for the image that makes it so.
 */
import t from 'tap';
import { Conflator } from '../../src/hub/conflate.js';
import type { FreshnessMessage } from '../../src/odds/messages.js';

const live = (mid: string): FreshnessMessage => ({ op: 'freshness', mid, live: true, at: 1 });
const stale = (mid: string): FreshnessMessage => ({ op: 'freshness', mid, live: false, why: 'late', at: 1 });

t.test('markets deferred per interval: the first starts its timer, each market counted once with its updates, a quiet interval forgotten', async (t) => {
  const c = new Conflator();
  t.equal(c.defer('a', 1000), true, 'the interval\'s first: start its timer');
  t.equal(c.defer('a', 1000, 2), false);
  t.equal(c.defer('b', 1000), false);
  t.equal(c.defer('a', 250), true, 'another interval is a queue of its own');
  t.ok(c.holds('a', 1000));
  t.same([...c.drain(1000)!], [['a', 3], ['b', 1]], 'each market once, with how many updates it held back');
  t.notOk(c.holds('a', 1000), 'sent: no longer held');
  t.equal(c.drain(1000), undefined, 'an interval with nothing deferred: nothing to send');
  t.equal(c.defer('a', 1000), true, 'and forgotten, so the next one starts its timer again');
  t.same([...c.drain(250)!], [['a', 1]]);
});

t.test('a live frame waits for the image the interval holds; any other goes at once and drops a live one held', async (t) => {
  const c = new Conflator();
  t.notOk(c.hold(live('a'), 1000), 'nothing held for the market: the frame goes now');
  c.defer('a', 1000);
  t.ok(c.hold(live('a'), 1000), 'its image is held: the live frame waits for it');
  t.same(c.release('a', 1000), live('a'), 'released with the image');
  t.equal(c.release('a', 1000), undefined, 'once');
  t.ok(c.hold(live('a'), 1000));
  t.notOk(c.hold(stale('a'), 1000), 'a stale frame goes now');
  t.equal(c.release('a', 1000), undefined, 'and the live one held before it is dropped: it is no longer true');
  c.clear();
  t.notOk(c.holds('a', 1000));
});
