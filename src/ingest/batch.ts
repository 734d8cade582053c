import type { ServiceError } from '../errors.js';
import type { OddsImage } from '../odds/image.js';
import type { PublisherStaleReason } from '../odds/messages.js';
import type { MarketType } from '../refdata/types.js';

/** A `suspend` item: every market of an event (of some types) suspended at once, with why. */
export interface BetStop {
  eventId: number;
  suspensionReason: string;
  sourceTime: number;
  types?: ReadonlySet<MarketType>;
}
import type { ReferenceItem } from './items.js';

/**
 * An odds or `stale` item as read where its batch arrived (`Ingest.read`): its shape is known,
 * its market is not yet (odds-items.ts judges that when the batch runs).
 */
export interface OddsCandidate {
  /** Its index in the batch, and how an error names it: `item 3 (odds 1.234)`. */
  i: number;
  where: string;
  /** Its market ID when it names one (a misshapen item of a known market makes that market unreliable). */
  mid: string | undefined;
  read: { image: OddsImage; late: boolean } | { mid: string; why: PublisherStaleReason } | { stop: BetStop } | { error: string };
}

/** A batch's items, read: reference items typed with the domain's names, odds and stale items as candidates, each by its index. */
export interface ReadItems {
  /** Every item the batch held. */
  count: number;
  /** All or nothing: they commit in one transaction. */
  reference: [number, ReferenceItem][];
  /** One by one: a bad one is refused alone (odds, stale and suspend items). */
  odds: OddsCandidate[];
}

/**
 * What reading a batch made of it: its items, or why the whole batch is refused (not a list, too
 * many items, a bad reference item), told only when the batch runs, after its key is checked; or,
 * for a message its lane's bounds refused, why it was left unread (the lane refuses it in its place).
 */
export type BatchItems = ReadItems | RefusedItems;

/**
 * A batch refused whole, and the markets its readable odds and stale items named: what their
 * subscribers hold is not what the publisher meant, so they are `unreliable` until their next
 * accepted image, as when one image is refused alone.
 */
export interface RefusedItems {
  refusal: ServiceError;
  mids?: readonly string[];
}

/**
 * One publisher batch on its way from the socket or the REST body to ingest: the id its ack
 * echoes, the bytes it holds, which is what the queues count (`batchOf`), and its items, read.
 */
export interface Batch {
  readonly id: number;
  readonly bytes: number;
  readonly items: BatchItems;
}

/**
 * What V8 holds per part of a read batch, rounded up from heap snapshots: an item with its object
 * and strings; a runner, or one `[price, size]` level, with its arrays and numbers. A MiB of JSON
 * odds of 150 runners reads into about 6 MiB of them.
 */
const ITEM_BYTES = 256;
const PART_BYTES = 96;

/**
 * A batch as the queues count it: by the memory its read items hold, estimated from their
 * runners and price levels, or its size on the wire when that is more. Counting the wire alone
 * let a key's queues of a few MiB hold hundreds of MB once read.
 */
export function batchOf(id: number, wireBytes: number, items: BatchItems): Batch {
  return { id, bytes: Math.max(wireBytes, heldBytes(items)), items };
}

/**
 * What a message of `wireBytes` may hold once read, before it is read: a MiB of JSON odds
 * images reads into about 6 MiB (`heldBytes`), rounded up. Asked of the bounds before a message
 * is read, so that one they would refuse once read is refused unread.
 */
export const readBytes = (wireBytes: number): number => HELD_PER_WIRE_BYTE * wireBytes;

/** What one byte of a message is taken to hold before it is read (`readBytes`). */
export const HELD_PER_WIRE_BYTE = 8;

/**
 * The most one byte of a JSON batch is counted once read: a price level `[2,1],` is 6 bytes on
 * the wire and counted PART_BYTES. The bounds are announced on the wire as this share of
 * themselves, so a publisher keeping within them is never refused for them, however dense its
 * ladders (at eight, a batch of ladders of whole prices was, and a refused batch sent again
 * after a later one took effect out of order).
 */
export const MOST_HELD_PER_JSON_BYTE = 16;

function heldBytes(items: BatchItems): number {
  if ('refusal' in items) return 0;
  let parts = 0;
  for (const { read } of items.odds) {
    if ('image' in read) for (const r of read.image.runners) parts += 1 + r.back.length + r.lay.length;
  }
  for (const [, item] of items.reference) {
    if (item.kind !== 'market') continue;
    parts += item.runners?.length ?? 0;
    for (const n of item.nested ?? []) parts += 1 + n.runners.length;
  }
  return items.count * ITEM_BYTES + parts * PART_BYTES;
}
