/**
 * The client's event emitter, the same in a browser and in Node: listeners in the order added,
 * each removable, and one that throws stops neither the others nor the caller (a frame must still
 * reach the book): its error is rethrown on its own.
 */
import t from 'tap';
import { Emitter } from '../../src/client/emitter.js';

class Events extends Emitter<{ frame: [n: number]; closed: [] }> {
  fire(n: number): void {
    this.emit('frame', n);
  }
}

t.test('listeners in order; off removes one; the remover returned by on does too', async (t) => {
  const e = new Events();
  const heard: string[] = [];
  const a = (n: number) => void heard.push(`a${n}`);
  e.on('frame', a);
  const offB = e.on('frame', (n) => void heard.push(`b${n}`));
  e.fire(1);
  e.off('frame', a);
  e.fire(2);
  offB();
  e.fire(3);
  t.same(heard, ['a1', 'b1', 'b2']);
});

t.test('a listener that throws: the others still run, the caller goes on, the error surfaces on its own', async (t) => {
  const e = new Events();
  const heard: number[] = [];
  e.on('frame', () => {
    throw new Error('listener bug');
  });
  e.on('frame', (n) => void heard.push(n));
  // The rethrow is scheduled as a task of its own: caught here instead of by the host.
  const scheduled: (() => void)[] = [];
  const setTimeout = globalThis.setTimeout;
  globalThis.setTimeout = ((fn: () => void) => scheduled.push(fn)) as unknown as typeof globalThis.setTimeout;
  try {
    t.doesNotThrow(() => e.fire(7));
  } finally {
    globalThis.setTimeout = setTimeout;
  }
  t.same(heard, [7]);
  t.equal(scheduled.length, 1);
  t.throws(() => scheduled[0](), { message: 'listener bug' });
});
