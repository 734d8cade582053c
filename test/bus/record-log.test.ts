/**
 * The record's log in one process: bounded, oldest dropped first, and a batch gathers what
 * arrives within its interval after the first entry, so a steady feed is written once an interval
 * rather than once an entry; a full batch or a stop does not wait. Time is a fake clock's.
 */
import t from 'tap';
import { MemoryRecordLog } from '../../src/bus/record-log.js';
import type { RecordEntry } from '../../src/bus/types.js';
import { FakeClock } from '../helpers/clock.js';

const note = (n: number): RecordEntry => ({ kind: 'note', note: { topic: 'ledger', src: 'pa', n, at: n, body: {} } });
const numbers = (b: { entries: readonly RecordEntry[] } | undefined) => b?.entries.map((e) => (e.kind === 'note' ? e.note.n : -1));
/** Whether the promise has settled once everything already queued has run. */
async function settled<T>(p: Promise<T>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  for (let i = 0; i < 5; i++) await new Promise((ok) => setImmediate(ok));
  return done;
}

t.test('a batch gathers for its interval after its first entry, and no longer', async (t) => {
  const clock = new FakeClock();
  const log = new MemoryRecordLog(100, { appended: () => undefined, dropped: () => undefined }, clock);
  const next = log.next(10, new AbortController().signal, 250);
  t.notOk(await settled(next), 'nothing to hand out yet');
  log.append(note(1));
  t.notOk(await settled(next), 'the first entry waits for others');
  clock.advance(100);
  log.append(note(2));
  t.notOk(await settled(next), 'still gathering 100 ms after the first');
  clock.advance(149);
  t.notOk(await settled(next), 'still gathering 249 ms after the first');
  clock.advance(1);
  t.same(numbers(await next), [1, 2], 'handed out 250 ms after the first, with what joined it');
});

t.test('a full batch goes at once; a stop hands out what waits without waiting', async (t) => {
  const clock = new FakeClock();
  const log = new MemoryRecordLog(100, { appended: () => undefined, dropped: () => undefined }, clock);
  const first = log.next(3, new AbortController().signal, 250);
  for (const n of [1, 2, 3, 4]) log.append(note(n));
  t.same(numbers(await first), [1, 2, 3], 'three of three wait: no gathering');
  const stop = new AbortController();
  const second = log.next(3, stop.signal, 250);
  t.notOk(await settled(second), 'one of three waits: gathering');
  stop.abort();
  t.same(numbers(await second), [4], 'a stop takes what waits');
  t.equal(clock.pending(), 0, 'no timer left behind');
  t.equal(await log.next(3, stop.signal, 250), undefined, 'and, empty, nothing once stopped');
});

t.test('without an interval, whatever waits is handed out at once; past its bound the oldest go', async (t) => {
  let dropped = 0;
  const log = new MemoryRecordLog(2, { appended: () => undefined, dropped: (n) => void (dropped += n) }, new FakeClock());
  for (const n of [1, 2, 3]) log.append(note(n));
  t.equal(dropped, 1, 'the oldest dropped, counted');
  t.same(numbers(await log.next(10, new AbortController().signal)), [2, 3]);
});
