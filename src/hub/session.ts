import type { Format, Frame } from '../odds/book.js';

/**
 * What the hub needs of a socket. uWS's WebSocket satisfies it as it is; a
 * test can hand in anything else that does.
 */
export interface Conn {
  send(frame: Frame, isBinary?: boolean, compress?: boolean): number;
  subscribe(topic: string): boolean;
  unsubscribe(topic: string): boolean;
  getBufferedAmount(): number;
  cork(fn: () => void): unknown;
  end(code?: number, reason?: string): void;
}

/** What the broadcaster needs of uWS's pub/sub: one call to publish, one to count. */
export interface Topics {
  publish(topic: string, frame: Frame, isBinary: boolean, compress?: boolean): boolean;
  numSubscribers(topic: string): number;
}

/**
 * How a socket takes a market: in its format, cut to `depth` ladder levels (0
 * all), at most one frame per `conflate` ms (0 every update), as images or,
 * with `delta`, as what changed since the frame before. Sockets that
 * asked the same share one key, the prefix of their topics. Not interned: a
 * client cycling through conflation intervals must not grow a table.
 */
export interface Variant {
  readonly key: string;
  readonly format: Format;
  readonly depth: number;
  readonly conflate: number;
  readonly delta: boolean;
}

export function variant(format: Format, depth = 0, conflate = 0, delta = false): Variant {
  return { key: `${format === 'json' ? 'j' : 'p'}${depth}.${conflate}${delta ? 'd' : ''}`, format, depth, conflate, delta };
}

/** One uWS topic per (variant, market): every socket on it gets the same bytes. */
export const topicOf = (v: Variant, mid: string): string => `${v.key}/${mid}`;

/** '$' cannot occur in a market ID, so the feed topic never collides with a market's. */
export const FEED_TOPIC: Readonly<Record<Format, string>> = { json: 'j$feed', proto: 'p$feed' };

/** Where a slow socket stood when it fell behind, so catching up sends exactly what changed. */
export interface Lag {
  readonly since: number;
  /** Each market's (epoch, seq) when it fell behind: what it had already been sent. */
  readonly seqs: Map<string, { epoch: string; seq: number }>;
  /** The state store's revision then: `market` and `result` frames newer than it are owed. */
  readonly stateRev: number;
  /** Markets it lost meanwhile; told in one `unsubscribed` once it has caught up. */
  readonly lost: Set<string>;
}

/** A subscriber socket as the hub sees it: who it is, what it takes, and how far behind it is. */
export class Session {
  /** Each market it takes and how. */
  readonly subs = new Map<string, Variant>();
  /** Filters that also take markets created later: event or sport ID to how. */
  readonly events = new Map<number, Variant>();
  readonly sports = new Map<number, Variant>();
  lag: Lag | undefined;
  /** Last frame sent to it directly; frames from topics are known by their markets' publish times. */
  lastSendAt = Date.now();
  /** The sweep's bucket that holds it until its heartbeat falls due. */
  hbSlot = 0;
  closed = false;

  constructor(
    readonly id: number,
    readonly keyId: string,
    readonly client: string,
    readonly format: Format,
    readonly hbMs: number,
    readonly conn: Conn,
  ) {}

  get binary(): boolean {
    return this.format === 'proto';
  }

  /** While behind: a market it lost, to be told in one `unsubscribed` once it has caught up. */
  lostWhileBehind(mid: string): void {
    this.lag?.lost.add(mid);
  }

  /** While behind: a market it took again, so it is no longer owed as lost. */
  regainedWhileBehind(mid: string): void {
    this.lag?.lost.delete(mid);
  }
}
