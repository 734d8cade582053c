import type { ServiceError } from '../errors.js';
import type { OddsImage, PublisherStaleReason } from '../odds/messages.js';
import type { MarketType } from '../refdata/types.js';

/** A `suspend` item: every market of an event (of some types) suspended at once, with why. */
export interface BetStop {
  eid: number;
  sr: string;
  ts: number;
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
export type BatchItems = ReadItems | { refusal: ServiceError };

/**
 * One publisher batch on its way from the socket or the REST body to ingest: the id its ack
 * echoes, its size on the wire, which is what the queues count, and its items, read.
 */
export interface Batch {
  readonly id: number;
  readonly bytes: number;
  readonly items: BatchItems;
}
