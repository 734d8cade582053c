import type { Book } from '../odds/book.js';
import type { OddsImage } from '../odds/messages.js';
import type { Broadcaster } from '../hub/broadcaster.js';
import type { Bus, Ordered } from '../bus/types.js';
import type { BusMetrics } from '../metrics/bus.js';
import type { FeedMonitor } from './monitor.js';

/** Images queued for sockets past which a publisher's next batch waits for them to go out. */
const BACKLOG = 1000;

export interface OddsFeedDeps {
  book: Book;
  bc: Broadcaster;
  bus: Bus;
  monitor: FeedMonitor;
  metrics: BusMetrics;
  /** Whether subscribers' sockets are backed up (the sweep knows). */
  pressure: { readonly congested: boolean; calm(): Promise<void> };
}

/**
 * The odds path, both ways: images from this pod's publishers are numbered
 * by the bus (which shares them with other pods), and every numbered image,
 * from here or elsewhere, becomes the book's newest if it is newer and goes
 * out to subscribers at once.
 */
export class OddsFeed {
  constructor(private readonly deps: OddsFeedDeps) {}

  /**
   * Images of one batch; resolves once each is in the book here (and, with
   * NATS, in the stream). While more images wait to be written than a turn
   * of the loop should carry, or most sockets are backed up, it resolves only
   * once they are out: a publisher sending faster than the sockets can take
   * feels it as slower acks, and frames are never queued without bound.
   */
  publish(images: readonly OddsImage[], pt: number): Promise<unknown> | void {
    let waits: Promise<unknown>[] | undefined;
    for (const image of images) {
      const p = this.deps.bus.publish(image, pt);
      if (p) (waits ??= []).push(p);
    }
    if (this.deps.bc.batch.size >= BACKLOG) (waits ??= []).push(this.deps.bc.batch.flushed());
    if (this.deps.pressure.congested) (waits ??= []).push(this.deps.pressure.calm());
    return waits && Promise.all(waits);
  }

  /** The bus's handler for every numbered image. */
  apply(o: Ordered, origin: 'local' | 'remote' | 'stored'): void {
    if (origin === 'remote') {
      this.deps.metrics.received.inc();
      this.deps.metrics.lag.observe(Math.max(0, Date.now() - o.pt) / 1000);
      // A publisher on another pod counts as heard here too.
      this.deps.monitor.heard();
    }
    const entry = this.deps.book.put(o.epoch, o.seq, o.pt, o.image, o.frame);
    if (entry) this.deps.bc.publish(entry);
  }
}
