import type { Book, Ordered } from '../odds/book.js';
import type { OddsImage } from '../odds/messages.js';
import type { Broadcaster } from '../hub/broadcaster.js';
import type { Pressure } from '../hub/publish-batch.js';
import type { Bus, OddsHandler, Origin } from '../bus/types.js';
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
  /** What a publisher's ack waits on while the service cannot keep up: the broadcaster's queue, the event loop's delay. */
  pressure: readonly Pressure[];
}

/**
 * The odds path, one update from a publisher's socket to a subscriber's, by the
 * types it passes through: ten hand-offs between named stages (`Batch`, `Lane`,
 * `PublisherBatches`, `Ingest`, `OddsItems`, `OddsRelay`, `Bus`, `OddsHandler`,
 * `Book`, `Broadcaster`); the functions inside a stage are its own. Two
 * callbacks: uWS's message handler and the end of the loop turn.
 *
 * 1. `/ingest` (http/ingest-routes.ts) decodes a message into a `Batch` and
 *    submits it to the connection's `Lane<Batch>` (ingest/lane.ts), bounded in
 *    count and bytes; `submit` resolves with the `IngestResult` the ack reports.
 * 2. The lane runs it, in order, through `PublisherBatches` to `Ingest.accept`
 *    (ingest/ingest.ts), which checks it, commits its reference items, and
 *    calls `OddsRelay.publish` with its accepted `OddsImage`s.
 * 3. `OddsRelay.publish` gives each image to `Bus.publish` (bus/types.ts),
 *    which numbers it in its market's order (`MemoryBus`, or `NatsBus` with
 *    its `Sequencer` storing it in the stream and sharing it with other pods)
 *    and hands it, as an `Ordered` (epoch, seq), to this class as its
 *    `OddsHandler`: `OddsRelay.odds`. Images other pods numbered arrive the
 *    same way (origin `remote`, or `stored` while syncing).
 * 4. `Book.put` (odds/book.ts) keeps it if it is newer, as a `BookEntry`:
 *    the one write of the book for this update.
 * 5. `Broadcaster.publish` (hub/broadcaster.ts) queues the entry in its own
 *    `PublishBatch`; at the end of the loop turn it drains the batch, encodes
 *    one `Frame` per `Variant` taken and publishes it to the variant's uWS
 *    topic (`Topics.publish`), or queues the market in its own `Conflator`
 *    when the variant is conflated, drained at the end of the interval.
 * 6. uWS writes the frame to every `Session` on the topic. The broadcaster
 *    tells the `Sweeper` (hub/sweep.ts) what it sent (`SendWatcher`); on its
 *    next pass the sweep decides for each of those sessions alone: backed up,
 *    it falls behind (`Session.fallBehind`) and catches up once drained
 *    (`Session.catchUp`); stuck, it is closed.
 * 7. Back in step 3, while the service itself cannot keep up (the
 *    broadcaster's queue, or the process's event loop: `LoopDelay`), the
 *    publisher's ack waits until they have `eased()`. What sockets hold never
 *    slows a publisher.
 */
export class OddsRelay implements OddsHandler {
  constructor(private readonly deps: OddsRelayDeps) {}

  /**
   * Images of one batch; resolves once each is in the book here (and, with
   * NATS, in the stream). While more images wait to be written than a turn of
   * the loop should carry, or the event loop runs late, it resolves only once
   * that has eased: a publisher sending faster than the process can publish
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
    const entry = this.deps.book.put(o);
    if (entry) this.deps.bc.publish(entry);
  }

  /** The bus between pods went down, or is back and synced: the feed is STALE, and every market held `bus`-stale, while it is down. */
  down(isDown: boolean): void {
    this.deps.metrics.connected.set(isDown ? 0 : 1);
    this.deps.monitor.busDown(isDown);
    this.deps.freshness.busDown(isDown);
  }
}
