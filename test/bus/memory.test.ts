/**
 * The bus of a single process: up from its start and never down, every image numbered in an
 * epoch that is new at each start, so a client that kept its book across a restart replaces it.
 */
import t from 'tap';
import { MemoryBus } from '../../src/bus/memory.js';
import type { OddsHandler } from '../../src/bus/types.js';
import { Book } from '../../src/odds/book.js';
import { img } from '../hub/fakes.js';

t.test('one process is the whole bus: up at once, images numbered in an epoch of its own', async (t) => {
  const book = new Book();
  const bus = new MemoryBus(book);
  const heard: string[] = [];
  // As the relay does: each image numbered goes into the book, which numbers the next.
  const handler: Pick<OddsHandler, 'down' | 'odds'> = {
    down: (d) => void heard.push(`down ${d}`),
    odds: (e, from) => {
      book.put(e);
      heard.push(`${from} ${e.image.marketId} ${e.seq}`);
    },
  };
  await bus.start(handler as OddsHandler);
  bus.publish(img('1.1', 2), 5);
  bus.publish(img('1.1', 2.1), 6);
  t.same(heard, ['down false', 'local 1.1 1', 'local 1.1 2']);
  t.match(bus.epoch, /^m/);
  t.not(new MemoryBus(new Book()).epoch, bus.epoch, 'a new start, a new epoch');
});
