import type { OddsImage, OddsMessage } from '../odds/messages.js';

export type ClientOp = 'attach' | 'detach';

/** What other pods send this one. */
export interface BusHandlers {
  /** An image of a market with its cluster-wide seq; `frame`, when given, is its protobuf frame as subscribers get it. */
  odds(msg: OddsMessage, frame?: Uint8Array): void;
  /** A client's market set changed on another pod (REST subscribe or unsubscribe). */
  client(op: ClientOp, client: string, mids: string[]): void;
  /** The bus went down (true) or came back and resynced (false). */
  down(isDown: boolean): void;
}

/**
 * How pods act as one service: odds images and client changes fan out to
 * every pod. `memory` is the single-process default and does nothing.
 */
export interface Bus {
  readonly kind: 'memory' | 'nats';
  /** Connects and loads the newest image of every market; resolves when this pod may report ready. */
  start(handlers: BusHandlers): Promise<void>;
  /**
   * The image's place in its market's order, the same on every pod; undefined
   * when this pod numbers it itself (one process, or the bus is down).
   */
  sequence(image: OddsImage, pt: number): Promise<number | undefined>;
  publishOdds(mid: string, frame: Uint8Array): void;
  publishClient(op: ClientOp, client: string, mids: readonly string[]): void;
  close(): Promise<void>;
}
