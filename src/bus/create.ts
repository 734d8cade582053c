import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Book } from '../odds/book.js';
import { MemoryBus } from './memory.js';
import { NatsBus } from './nats/bus.js';
import type { Bus } from './types.js';

export function createBus(config: Config, book: Book, log: Logger): Bus {
  return config.bus === 'nats' ? new NatsBus({ url: config.natsUrl, prefix: config.natsPrefix, book, log }) : new MemoryBus(book);
}
