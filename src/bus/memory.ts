import type { Bus } from './types.js';

/** One process is the whole service: nothing to fan out. */
export const memoryBus: Bus = {
  kind: 'memory',
  start: async () => undefined,
  sequence: async () => undefined,
  publishOdds: () => undefined,
  publishClient: () => undefined,
  close: async () => undefined,
};
