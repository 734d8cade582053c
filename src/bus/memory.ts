import { newEpoch } from '../odds/book.js';
import type { OddsImage } from '../odds/image.js';
import type { Bus, BusBook, OddsHandler, RecordLog } from './types.js';

/**
 * One process is the whole service: images are numbered here, in an epoch
 * that is new at every start, so a client that kept its book across a
 * restart replaces it instead of ignoring every frame as old.
 */
export class MemoryBus implements Bus {
  readonly kind = 'memory';
  readonly epoch = newEpoch('m');
  private handler: OddsHandler | undefined;

  /** The record's log: a bounded queue this process's recorder drains. */
  constructor(private readonly book: BusBook, readonly record: RecordLog | undefined = undefined) {}

  async start(odds: OddsHandler): Promise<void> {
    this.handler = odds;
    // One process is the whole bus: up from its start and never down, said as every bus says it.
    odds.down(false);
  }

  publish(image: OddsImage, publishTime: number): void {
    this.handler?.odds({ epoch: this.epoch, seq: this.book.next(image.marketId, this.epoch), publishTime, image }, 'local');
  }

  publishClient(): void {}

  shareFreshness(): void {}

  async close(): Promise<void> {}
}
