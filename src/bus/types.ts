import type { OddsImage } from '../odds/messages.js';

export type ClientOp = 'attach' | 'detach';

/** Checks an odds image as ingest does: the image, or the first problem. */
export type ImageCheck = (o: Record<string, unknown>) => { image: OddsImage } | { error: string };

/** An image with its place in its market's order. */
export interface Ordered {
  epoch: string;
  seq: number;
  pt: number;
  image: OddsImage;
  /** Its full protobuf frame, when it arrived as one (from the bus). */
  frame?: Uint8Array;
}

/** What the bus hands this pod. */
export interface BusHandlers {
  /**
   * An image to keep if it is newer than the one held: numbered here
   * (`local`), sent live by another pod (`remote`), or read back from the
   * stream while syncing (`stored`).
   */
  odds(o: Ordered, origin: 'local' | 'remote' | 'stored'): void;
  /** A client's market set changed on another pod (REST subscribe or unsubscribe). */
  client(op: ClientOp, client: string, mids: string[]): void;
  /** The bus went down (true), or is back and synced (false). */
  down(isDown: boolean): void;
}

/**
 * How pods act as one service. `memory` is one process; `nats` shares odds
 * images and client changes between pods, and numbers each market's images
 * the same way on every pod.
 */
export interface Bus {
  readonly kind: 'memory' | 'nats';
  /** Connects and syncs; resolves once synced, or once it is clear the bus is away (it keeps trying). */
  start(handlers: BusHandlers): Promise<void>;
  /**
   * Numbers an image in its market's order, hands it to `odds` and shares it
   * with other pods. Images of one market are numbered in the order given.
   * Returns nothing when done at once, or a promise.
   */
  publish(image: OddsImage, pt: number): Promise<void> | void;
  publishClient(op: ClientOp, client: string, mids: readonly string[]): void;
  close(): Promise<void>;
}
