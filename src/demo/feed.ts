import { oddsItem, type OddsImage } from '../odds/image.js';
import type { BatchItems } from '../ingest/batch.js';
import type { IngestResult, SentBy } from '../ingest/ingest.js';
import type { Logger } from '../log.js';
import type { Feeder } from '../relay/freshness.js';

/** The ingest path as the simulator's feed uses it (ingest.ts: `Ingest`). */
export interface SimIngest {
  read(data: unknown): BatchItems;
  accept(items: BatchItems, by: SentBy): Promise<IngestResult>;
}

interface SimFeedOptions {
  ingest: SimIngest;
  /** The simulator as a publisher: the markets it feeds are its. */
  feeder: Feeder;
  /** Items a batch may hold: the service's `INGEST_MAX_ITEMS`. */
  maxItems: number;
  log: Logger;
}

/**
 * The simulator's images on their way through the ingest path, kept within what a publisher
 * connection may hold: one batch at a time, of at most the service's items a batch. While one is
 * being taken (Postgres slow to load a market it has not seen), each market's newest image waits
 * in its place, a later tick's replacing an earlier one not yet sent: what waits is at most one
 * image a market however long ingest takes, and nothing piles up behind a slow batch.
 */
export class SimFeed {
  private readonly waiting = new Map<string, OddsImage>();
  private sending = false;

  constructor(private readonly o: SimFeedOptions) {}

  /** Images waiting to go. */
  get size(): number {
    return this.waiting.size;
  }

  publish(images: readonly OddsImage[]): void {
    for (const image of images) this.waiting.set(image.marketId, image);
    void this.send();
  }

  /** Drops what waits: the simulator stopped. */
  stop(): void {
    this.waiting.clear();
  }

  private async send(): Promise<void> {
    if (this.sending) return;
    this.sending = true;
    const { ingest, feeder, maxItems, log } = this.o;
    while (this.waiting.size) {
      const batch: OddsImage[] = [];
      for (const [mid, image] of this.waiting) {
        if (batch.length === maxItems) break;
        batch.push(image);
        this.waiting.delete(mid);
      }
      try {
        await ingest.accept(ingest.read(batch.map((image) => oddsItem(image))), { from: 'simulator', feeder });
      } catch (err) {
        log.warn('simulator batch refused', { err: (err as Error).message });
      }
    }
    this.sending = false;
  }
}
