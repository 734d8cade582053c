import { newEpoch, type Book } from '../odds/book.js';
import type { OddsImage } from '../odds/messages.js';
import type { Bus, BusHandlers } from './types.js';

/**
 * One process is the whole service: images are numbered here, in an epoch
 * that is new at every start, so a client that kept its book across a
 * restart replaces it instead of ignoring every frame as old.
 */
export class MemoryBus implements Bus {
  readonly kind = 'memory';
  readonly epoch = newEpoch('m');
  private handlers: BusHandlers | undefined;

  constructor(private readonly book: Book) {}

  async start(h: BusHandlers): Promise<void> {
    this.handlers = h;
  }

  publish(image: OddsImage, pt: number): void {
    this.handlers?.odds({ epoch: this.epoch, seq: this.book.next(image.mid, this.epoch), pt, image }, 'local');
  }

  publishClient(): void {}

  async close(): Promise<void> {}
}
