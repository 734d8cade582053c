import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Book } from '../odds/book.js';
import type { Broadcaster } from '../odds/broadcaster.js';
import type { Ingest } from '../ingest/ingest.js';
import type { BusMetrics } from '../metrics/bus.js';
import type { StoredSets } from '../clients/markets.js';
import { memoryBus } from './memory.js';
import { NatsBus } from './nats.js';
import type { Bus, BusHandlers } from './types.js';

export function createBus(config: Config, log: Logger): Bus {
  return config.bus === 'nats' ? new NatsBus(config.natsUrl, config.natsPrefix, log) : memoryBus;
}

/**
 * What this pod does with what other pods send: newer images go into the book
 * and out to local subscribers, client changes to the client's local sockets.
 * While the bus is down every subscriber is told the feed is stale.
 */
export function linkBus(book: Book, broadcaster: Broadcaster, ingest: Ingest, stored: StoredSets, metrics: BusMetrics): BusHandlers & { isDown(): boolean } {
  let down = false;
  metrics.connected.set(1);
  return {
    odds: (msg, frame) => {
      metrics.received.inc();
      metrics.lag.observe(Math.max(0, Date.now() - msg.pt) / 1000);
      const { mid, ts, st, ip, r } = msg;
      const entry = book.apply({ mid, ts, st, ip, r }, msg.pt, msg.seq, frame);
      if (entry) broadcaster.publish(entry);
      if (!down) ingest.touch();
    },
    client: (op, client, mids) => {
      stored.invalidate(client);
      if (op === 'attach') broadcaster.attachClient(client, mids);
      else broadcaster.detachClient(client, mids);
    },
    down: (isDown) => {
      down = isDown;
      metrics.connected.set(isDown ? 0 : 1);
      if (isDown) broadcaster.setFeed('STALE');
    },
    isDown: () => down,
  };
}
