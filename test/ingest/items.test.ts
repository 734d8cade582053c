/**
 * How an ingest item names itself in a refusal, as the publisher sent it: `item 3 (market 1.234)`,
 * by the ID key of its kind; without a kind or an ID, by its index alone.
 */
import t from 'tap';
import { describe, describeItem, rowName } from '../../src/ingest/items.js';

t.test('each kind by its own ID key', async (t) => {
  t.equal(rowName({ kind: 'sport', si: 4 }), 'sport 4');
  t.equal(rowName({ kind: 'league', li: 7 }), 'league 7');
  t.equal(rowName({ kind: 'event', eid: 300 }), 'event 300');
  t.equal(rowName({ kind: 'market', mid: '1.2' }), 'market 1.2');
  t.equal(rowName({ kind: 'odds', mid: '1.2' }), 'odds 1.2');
  t.equal(rowName({ kind: 'result', mid: '1.2' }), 'result 1.2');
});

t.test('an item without a kind or a usable ID is named by its index alone', async (t) => {
  t.equal(describe(3, { kind: 'market', mid: '1.2' }), 'item 3 (market 1.2)');
  t.equal(describe(0, { mid: '1.2' }), 'item 0');
  t.equal(describe(1, { kind: 'event', eid: { x: 1 } }), 'item 1');
  t.equal(describe(2, { kind: 'sport' }), 'item 2');
  t.equal(describeItem(5, { kind: 'result', marketId: '1.9' }), 'item 5 (result 1.9)', 'a validated result by its market');
});

t.test('a 100,000-character ID or kind is named by its first 64 characters and its length, never echoed whole', async (t) => {
  const long = 'x'.repeat(100_000);
  t.equal(describe(4, { kind: 'odds', mid: long }), `item 4 (odds ${'x'.repeat(64)}… (100000 characters))`);
  t.equal(rowName({ kind: long, mid: '1.2' }), `${'x'.repeat(64)}… (100000 characters) 1.2`);
  t.equal(rowName({ kind: 'market', mid: 'm'.repeat(64) }), `market ${'m'.repeat(64)}`, 'the longest valid ID whole');
});
