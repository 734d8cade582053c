/**
 * The small bounded structures of lib/: bytes held per source, work in order per key, a queue
 * that stays cheap while it churns.
 */
import t from 'tap';
import { ByteBudget } from '../../src/lib/byte-budget.js';
import { Fifo } from '../../src/lib/fifo.js';
import { eachLimit, SerialByKey } from '../../src/lib/serial.js';

t.test('ByteBudget: bytes per source within the bound; one item alone always fits; given back, room again', async (t) => {
  const b = new ByteBudget(100, (held, max) => `holding ${held} of ${max}`);
  t.equal(b.spend('a', 60), undefined);
  t.equal(b.spend('a', 50), 'holding 60 of 100', 'past the bound: refused, with what it holds');
  t.equal(b.refuses('a', 40), undefined, 'exactly to the bound fits');
  t.equal(b.spend('b', 500), undefined, 'a source holding nothing takes even one item larger than the bound');
  t.equal(b.spend('b', 1), 'holding 500 of 100');
  b.give('a', 60);
  t.equal(b.spend('a', 100), undefined, 'given back: room for the whole bound again');
});

t.test('SerialByKey: tasks of one key in order, one at a time, whatever each does; keys side by side', async (t) => {
  const serial = new SerialByKey<string>();
  const log: string[] = [];
  let release!: () => void;
  const held = new Promise<void>((ok) => (release = ok));
  const first = serial.run('k', async () => { log.push('k1 start'); await held; log.push('k1 end'); throw new Error('k1 failed'); });
  const second = serial.run('k', () => { log.push('k2'); return 2; });
  const other = serial.run('j', () => { log.push('j1'); return 'j'; });
  t.equal(await other, 'j');
  t.same(log, ['k1 start', 'j1'], 'another key does not wait');
  release();
  await t.rejects(first, /k1 failed/);
  t.equal(await second, 2, 'a failure before it does not stop the next');
  t.same(log, ['k1 start', 'j1', 'k1 end', 'k2']);
  await serial.idle();
});

t.test('eachLimit: at most `limit` in flight, every item once; the first failure rejects', async (t) => {
  let inFlight = 0;
  let most = 0;
  const done: number[] = [];
  await eachLimit([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
    most = Math.max(most, ++inFlight);
    await new Promise((ok) => setImmediate(ok));
    done.push(n);
    inFlight--;
  });
  t.equal(most, 3);
  t.same(done.sort(), [1, 2, 3, 4, 5, 6, 7]);
  await t.rejects(eachLimit([1, 2], 2, async (n) => { if (n === 2) throw new Error('two'); }), /two/);
});

t.test('Fifo: first in, first out, through more churn than it keeps', async (t) => {
  const q = new Fifo<number>();
  for (let i = 0; i < 5000; i++) {
    q.push(i);
    if (i % 2) q.shift();
  }
  t.equal(q.size, 2500);
  t.equal(q.peek(), 2500, 'the oldest left');
  q.clear();
  t.equal(q.size, 0);
  t.equal(q.peek(), undefined);
});
