/**
 * Markets another publisher than the simulator feeds: the simulator leaves them alone from then
 * on, and a market leaves the set when it leaves the read model (nested markets too), so the set
 * never outgrows the markets held.
 */
import t from 'tap';
import { OutsideFeeds } from '../../src/ingest/outside.js';
import type { ModelChange } from '../../src/refdata/model.js';
import type { Market } from '../../src/refdata/types.js';

const market = (id: string, nested: string[] = []) => ({ id, nested: nested.map((n) => ({ id: n })) }) as unknown as Market;

t.test('claimed markets stay claimed until the read model drops them, nested ones with their parent', async (t) => {
  const feeds = new OutsideFeeds();
  for (const mid of ['1.1', '1.2', '1.3.a', '1.4']) feeds.claim(mid);
  t.ok(feeds.has('1.1'));
  t.notOk(feeds.has('1.9'), 'never claimed');
  const changes: ModelChange[] = [
    { kind: 'market', before: market('1.1'), after: undefined },
    { kind: 'market', before: market('1.3', ['1.3.a', '1.3.b']), after: market('1.3', ['1.3.b']) },
    { kind: 'market', before: market('1.4'), after: market('1.4') },
    { kind: 'market', before: undefined, after: market('1.5') },
  ];
  feeds.forgetGone(changes);
  t.same(['1.1', '1.2', '1.3.a', '1.4'].filter((m) => feeds.has(m)), ['1.2', '1.4'], 'the deleted market and the nested one gone from its parent are forgotten; a changed one stays');
});
