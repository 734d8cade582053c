import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { BusMetrics } from '../metrics/bus.js';
import { MemoryBus } from './memory.js';
import { NatsBus } from './nats/bus.js';
import type { Bus, HeldImages, ImageCheck } from './types.js';

export interface BusDeps {
  book: HeldImages;
  log: Logger;
  /** Ingest's check of an odds image: what arrives over NATS is held to it. */
  check: ImageCheck;
  metrics: BusMetrics;
}

export function createBus(config: Config, deps: BusDeps): Bus {
  if (config.bus === 'memory') return new MemoryBus(deps.book);
  return new NatsBus({ url: config.natsUrl, prefix: config.natsPrefix, auth: config.natsAuth, tls: config.natsTls, ...deps });
}
