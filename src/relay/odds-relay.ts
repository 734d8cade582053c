import type { Book, Ordered } from '../odds/book.js';
import type { OddsImage } from '../odds/image.js';
import type { Broadcaster } from '../hub/broadcaster.js';
import type { Pressure } from '../hub/publish-batch.js';
import type { Bus, OddsHandler, Provenance } from '../bus/types.js';
import type { BusMetrics } from '../metrics/bus.js';
import type { RecordTaps } from '../record/taps.js';
import type { FeedMonitor } from './feed-monitor.js';
import type { Freshness } from './freshness.js';

export interface OddsRelayDeps {
  /** Written here only, once per image the bus hands over. */
  book: Book;
  broadcaster: Broadcaster;
  bus: Bus;
  monitor: FeedMonitor;
  /** Every market held here is stale while the bus is down. */
  freshness: Pick<Freshness, 'busDown'>;
  metrics: BusMetrics;
  /** What a publisher's ack waits on while the service cannot keep up: the broadcaster's queue, the event loop's delay. */
  pressure: readonly Pressure[];
  /** The record, handed each image this pod numbered (none with RECORD=off). */
  record?: Pick<RecordTaps, 'odds'>;
}

/**
 * The odds path, one update from a publisher's socket to a subscriber's, by
 * the types it passes through. From the `/ingest` message handler to uWS's
 * publish it is handed from one owner to the next ten times (handler, read,
 * lane, accept, judge, relay, bus, relay's handler, book, broadcaster, uWS),
 * in two callbacks: uWS's message handler, and the end of the loop turn for
 * the last hand-off.
 * With `BUS=memory` that is 22 calls, the helpers inside each owner counted
 * (every call handed the update: its bytes, batch, item, image or book
 * entry), numbered below. REST ingest skips the lane (calls 6 and 7).
 *
 * 1. Bytes to a `Batch` (http/ingest-routes.ts): the handler calls
 *    (1) `readBatch`, which decodes (2) `parseJson` or `decodeIngestProto`
 *    and (3) `Ingest.read` reads the items: reference items typed, each odds
 *    item an `OddsCandidate` through (4) `validateOddsItem` and
 *    (5) `validateOdds`; what refuses the whole batch is kept, told when it runs.
 * 2. The `Batch` through its `Lane` to `JudgedOdds` (ingest/): (6) `Lane.submit`
 *    queues it, bounded in count and bytes; (7) `Lane.pump` runs the
 *    connection's batches in order through (8) `Ingest.accept`, the lane's
 *    `BatchRunner` (its `IngestResult` is the ack), which checks the key and
 *    has (9) `OddsJudge.judge` judge each candidate against its market and
 *    (10) `checkPrices`, its price rule; the reference items commit, then the
 *    accepted `OddsImage`s come here.
 * 3. `OddsImage` to `Ordered`: (11) `OddsRelay.publish` gives each image to
 *    (12) `Bus.publish` (bus/types.ts), which numbers it in its market's order
 *    (`MemoryBus`, or `NatsBus` with its `Sequencer` storing it in the stream
 *    and sharing it with other pods). Images other pods numbered arrive the
 *    same way (provenance `remote`, or `stored` while syncing).
 * 4. `Ordered` to `BookEntry`: the bus hands it to this class as its
 *    `OddsHandler`, (13) `OddsRelay.odds`, which calls (14) `Book.put`
 *    (odds/book.ts); the book keeps it, if newer, as a (15) `new BookEntry`:
 *    the one write of the book for this update.
 * 5. `BookEntry` to `Frame` (hub/broadcaster.ts): (16) `Broadcaster.publish`
 *    queues the entry in its own `PublishBatch` (17) `add`; at the end of the
 *    loop turn (18) `Broadcaster.flush` (19) `drain`s the batch and, per
 *    `Variant` taken, gets a `Frame` from the entry (20) `frame` or
 *    `deltaFrame` and (21) `toTopic` publishes it to the variant's uWS topic,
 *    (22) `Topics.publish`; a conflated variant's market waits in the
 *    broadcaster's `Conflator`, drained at the end of the interval.
 * 6. uWS writes the frame to every `Subscriber` on the topic, and the topic
 *    counts what it carried. The broadcaster tells the `Sweep` (hub/sweep.ts)
 *    what it published (`PublishWatcher`); each of those subscribers is
 *    looked at on its next pass, and one close to what its link can carry at
 *    once: each decides alone (`Subscriber.check`), by what it was sent and
 *    what its pongs say it has read, whether it falls behind (owed its
 *    markets, sent the newest of each as its link takes them) or is closed.
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
  publish(images: readonly OddsImage[], publishTime: number): Promise<unknown> | void {
    let waits: Promise<unknown>[] | undefined;
    for (const image of images) {
      const p = this.deps.bus.publish(image, publishTime);
      if (p) (waits ??= []).push(p);
    }
    for (const stage of this.deps.pressure) if (stage.busy()) (waits ??= []).push(stage.eased());
    return waits && Promise.all(waits);
  }

  /** The newest image of a market held here, if any: what a bet stop suspends. */
  image(mid: string): OddsImage | undefined {
    return this.deps.book.get(mid)?.image;
  }

  /** Every numbered image, from here or another pod. */
  odds(o: Ordered, provenance: Provenance): void {
    if (provenance === 'remote') {
      this.deps.metrics.received.inc();
      this.deps.metrics.lag.observe(Math.max(0, Date.now() - o.publishTime) / 1000);
      // A publisher on another pod counts as heard here too.
      this.deps.monitor.heard();
    }
    // Recorded once in the cluster: by the pod that numbered it, whether or not its book keeps it.
    if (provenance === 'local') this.deps.record?.odds(o);
    const entry = this.deps.book.put(o);
    if (entry) this.deps.broadcaster.publish(entry);
  }

  /** The bus between pods went down, or is back and synced: the feed is STALE, and every market held `bus`-stale, while it is down. */
  down(isDown: boolean): void {
    this.deps.metrics.connected.set(isDown ? 0 : 1);
    this.deps.monitor.busDown(isDown);
    this.deps.freshness.busDown(isDown);
  }
}
