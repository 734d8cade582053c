import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { BusMetrics } from '../metrics/bus.js';
import { MemoryBus } from './memory.js';
import { MemoryRecordLog, type RecordLogCounts } from './record-log.js';
import type { Component } from '../lib/component.js';
import type { Bus, ClientHandler, FreshnessHandler, BusBook, ImageCheck, OddsHandler } from './types.js';

export interface BusDeps {
  book: BusBook;
  log: Logger;
  /** Ingest's check of an odds image: what arrives over NATS is held to it. */
  check: ImageCheck;
  metrics: BusMetrics;
  /** What the record's log counts: entries appended, and dropped past its bound. */
  record: RecordLogCounts;
}

/**
 * The bus in use. The NATS client is loaded only for a service on NATS: it is a third of the
 * service's load time (85 ms of CPU at every start), for nothing on a single pod's memory bus.
 */
export async function createBus(config: Config, deps: BusDeps): Promise<Bus> {
  if (config.bus === 'memory') return new MemoryBus(deps.book, config.record ? new MemoryRecordLog(config.recordQueueMax, deps.record) : undefined);
  const { NatsBus } = await import('./nats/bus.js');
  const { record, ...rest } = deps;
  return new NatsBus({
    url: config.natsUrl, prefix: config.natsPrefix, auth: config.natsAuth, tls: config.natsTls, ...rest,
    record: config.record ? { maxBytes: config.recordBusBytes, batch: config.recordBatch, counts: record } : undefined,
  });
}

/** Who the bus hands what it carries to. */
export interface BusHandlers {
  odds: OddsHandler;
  clients: ClientHandler;
  freshness: FreshnessHandler;
}

/**
 * The bus as a component: connected and synced once the read model is
 * loaded (what arrives is checked against it), closed once no publisher or
 * socket is left to use it.
 */
export class BusConnection implements Component {
  readonly name = 'bus';

  constructor(
    private readonly bus: Bus,
    private readonly handlers: BusHandlers,
  ) {}

  start(): Promise<void> {
    return this.bus.start(this.handlers.odds, this.handlers.clients, this.handlers.freshness);
  }

  stop(): Promise<void> {
    return this.bus.close();
  }
}
