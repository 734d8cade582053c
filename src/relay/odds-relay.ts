import type { Book } from '../odds/book.js';
import type { OddsImage } from '../odds/messages.js';
import type { Broadcaster } from '../hub/broadcaster.js';
import type { Pressure } from '../hub/publish-batch.js';
import type { Bus, OddsHandler, Ordered, Origin } from '../bus/types.js';
import type { BusMetrics } from '../metrics/bus.js';
import type { FeedMonitor } from './feed-monitor.js';
import type { Freshness } from './freshness.js';

export interface OddsRelayDeps {
  /** Written here only, once per image the bus hands over. */
  book: Book;
  bc: Broadcaster;
  bus: Bus;
  monitor: FeedMonitor;
  /** Every market held here is stale while the bus is down. */
  freshness: Pick<Freshness, 'busDown'>;
  metrics: BusMetrics;
  /** The fan-out stages a publisher's ack waits on while they are busy: the broadcaster's queue, the sweep's view of the sockets. */
  pressure: readonly Pressure[];
}

/**
 * The odds path, both ways, one update at a time:
 *
 * 1. `/ingest` (http/ingest-routes.ts) hands a publisher's batch to `Ingest.accept`
 *    (ingest/ingest.ts), which checks it, commits its reference items, and
 *    calls `OddsRelay.publish` with its odds images.
 * 2. `OddsRelay.publish` gives each image to `Bus.publish` (bus/types.ts),
 *    which numbers it in its market's order (`MemoryBus`, or `NatsBus` with
 *    its `Sequencer` storing it in the stream and sharing it with other pods).
 * 3. The bus hands the numbered image (`Ordered`) to this class as its
 *    `OddsHandler`: `OddsRelay.odds`. Images other pods numbered arrive the
 *    same way (origin `remote`, or `stored` while syncing).
 * 4. `Book.put` (odds/book.ts) keeps it if it is newer, as a `BookEntry`:
 *    the one write of the book for this update.
 * 5. `Broadcaster.publish` (hub/broadcaster.ts) queues the entry in its
 *    `PublishBatch`; at the end of the loop turn each variant's frame is
 *    encoded once and published to its uWS topic, or marked for the
 *    `Conflator` when the variant is conflated.
 * 6. uWS writes the frame to every subscriber socket on the topic. The
 *    `Sweeper` (hub/sweep.ts) then looks at those sockets (`takeSent`): a
 *    socket backed up falls behind and catches up once drained.
 * 7. Back in step 2, while the broadcaster or the sweeper is `busy()`, the
 *    publisher's ack waits until it has `eased()`.
 */
export class OddsRelay implements OddsHandler {
  constructor(private readonly deps: OddsRelayDeps) {}

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
    for (const stage of this.deps.pressure) if (stage.busy()) (waits ??= []).push(stage.eased());
    return waits && Promise.all(waits);
  }

  /** Every numbered image, from here or another pod. */
  odds(o: Ordered, origin: Origin): void {
    if (origin === 'remote') {
      this.deps.metrics.received.inc();
      this.deps.metrics.lag.observe(Math.max(0, Date.now() - o.pt) / 1000);
      // A publisher on another pod counts as heard here too.
      this.deps.monitor.heard();
    }
    const entry = this.deps.book.put(o.epoch, o.seq, o.pt, o.image, o.frame);
    if (entry) this.deps.bc.publish(entry);
  }

  /** The bus between pods went down, or is back and synced: the feed is STALE, and every market held `bus`-stale, while it is down. */
  down(isDown: boolean): void {
    this.deps.metrics.connected.set(isDown ? 0 : 1);
    this.deps.monitor.busDown(isDown);
    this.deps.freshness.busDown(isDown);
  }
}
