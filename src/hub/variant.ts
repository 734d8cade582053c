import type { Format } from '../odds/book.js';

/**
 * The conflation intervals the server runs, in ms. A client may ask any interval the protocol
 * accepts; it gets the smallest preset at or above it, so it never gets more than one frame per
 * interval it asked, and however many intervals clients ask, each market is encoded for at most
 * these few (docs/protocol.md#conflation).
 */
export const CONFLATE_PRESETS: readonly number[] = [100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000];

/** The preset a requested interval runs at: 0 stays 0 (every update). */
export function conflatePreset(ms: number): number {
  if (ms <= 0) return 0;
  return CONFLATE_PRESETS.find((p) => p >= ms) ?? CONFLATE_PRESETS[CONFLATE_PRESETS.length - 1];
}

/**
 * How a socket takes a market: in its format, cut to `depth` ladder levels (0
 * all), at most one frame per `conflate` ms (0 every update; snapped to a
 * preset), as images or, with `delta`, as what changed since the frame before.
 * Sockets that asked the same share one key, the prefix of their topics.
 */
export interface Variant {
  readonly key: string;
  readonly format: Format;
  readonly depth: number;
  readonly conflate: number;
  readonly delta: boolean;
}

export function variant(format: Format, depth = 0, conflate = 0, delta = false): Variant {
  const every = conflatePreset(conflate);
  return { key: `${format === 'json' ? 'j' : 'p'}${depth}.${every}${delta ? 'd' : ''}`, format, depth, conflate: every, delta };
}

/** One uWS topic per (variant, market): every socket on it gets the same bytes. */
export const topicOf = (v: Variant, mid: string): string => `${v.key}/${mid}`;

/** '$' cannot occur in a market ID, so the feed topic never collides with a market's. */
export const FEED_TOPIC: Readonly<Record<Format, string>> = { json: 'j$feed', proto: 'p$feed' };

/** Bytes a frame of this size costs on the wire, its WebSocket header included: what a socket's reading is measured in. */
export const wireBytes = (frame: string | Uint8Array): number => (typeof frame === 'string' ? frame.length : frame.byteLength) + 4;
