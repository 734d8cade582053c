import type pg from 'pg';
import type { Component } from './lib/component.js';
import type { ReadModel } from './refdata/model.js';
import type { Book } from './odds/book.js';
import type { Hub } from './hub/hub.js';
import type { Broadcaster } from './hub/broadcaster.js';
import type { Ingest } from './ingest/ingest.js';

export interface Service {
  readonly port: number;
  /** Where a client on this machine reaches it. */
  readonly url: string;
  /** The address and port the listen socket is bound to, in words: `0.0.0.0:8080 (every interface)`. */
  readonly bound: string;
  /** Where `/metrics` (and the probes) listen, apart from the public port. */
  readonly metricsPort: number;
  readonly metricsUrl: string;
  readonly pool: pg.Pool;
  readonly model: ReadModel;
  readonly book: Book;
  readonly hub: Hub;
  readonly broadcaster: Broadcaster;
  readonly ingest: Ingest;
  /** Drains and stops: not ready, no new connections, requests finish, publishers answered, sockets get 1001, Postgres closes. */
  close(): Promise<void>;
}

/**
 * Start and shutdown, in order: the components start in the order listed and
 * stop in reverse, so what serves stops before what it uses. The service
 * (service.ts) lists them so that listening comes first (/health answers, and
 * a taken port fails, while Postgres is awaited) and readiness last; shutdown
 * then takes the pod out of rotation, lets requests and sockets finish,
 * answers every batch a publisher sent, and only then closes the bus and
 * Postgres, so nothing is acked that could no longer be written or published.
 * The metrics listener closes last, so Prometheus sees the drain.
 */
export class Lifecycle {
  /** Those whose start was called, in order: a failed start stops them, the one that failed included. */
  private readonly started: Component[] = [];
  private stopping: Promise<void> | undefined;

  constructor(private readonly components: readonly Component[]) {}

  /**
   * Starts each in turn; when one fails, every one started so far stops, in reverse, and the error
   * is thrown. Stopped meanwhile, it starts no more and says so: none starts after its stop.
   */
  async start(): Promise<void> {
    for (const c of this.components) {
      if (this.stopping) throw new Error(`stopped while starting, before ${c.name}`);
      // Before its start: one that fails part way may hold what it opened.
      this.started.push(c);
      try {
        const starting = c.start();
        if (starting) await starting;
      } catch (err) {
        await this.stop();
        throw err;
      }
    }
  }

  /** Stops every component started, last first; called again, it is the same stop. */
  stop(): Promise<void> {
    return (this.stopping ??= this.stopAll());
  }

  private async stopAll(): Promise<void> {
    for (const c of this.started.splice(0).reverse()) {
      const stopping = c.stop();
      if (stopping) await stopping;
    }
  }
}
