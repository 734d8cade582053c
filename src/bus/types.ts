import type { Book, Ordered } from '../odds/book.js';
import type { OddsImage } from '../odds/image.js';
import type { StaleReason } from '../odds/messages.js';

/** How a client's stored market set changed (REST subscribe or unsubscribe), told to other pods. */
export type StoredSetOp = 'attach' | 'detach';

/** Checks an odds image as ingest does: the image, or the first problem. */
export type ImageCheck = (o: Record<string, unknown>) => { image: OddsImage } | { error: string };

/** Where an image came from: numbered here, sent live by another pod, or read back from the stream while syncing. */
export type Provenance = 'local' | 'remote' | 'stored';

/** What the bus hands this pod's odds path (relay/odds-relay.ts): numbered images, and whether the bus is up. */
export interface OddsHandler {
  /** An image to keep if it is newer than the one held. */
  odds(o: Ordered, provenance: Provenance): void;
  /** The bus went down (true), or is back and synced (false). */
  down(isDown: boolean): void;
}

/** What the bus hands this pod's stored market sets: a client's set changed on another pod (REST subscribe or unsubscribe). */
export interface ClientHandler {
  client(op: StoredSetOp, client: string, mids: string[]): void;
}

/** Why a market is stale where its publisher is: every reason but the bus, which each pod judges for itself. */
export type SourceReason = Exclude<StaleReason, 'bus'>;

/** A market's freshness as the pod whose publisher feeds it sees it: `why` absent when live there, since `at` (ms). */
export interface SourceFreshness {
  mid: string;
  why: SourceReason | undefined;
  at: number;
}

/** What the bus hands this pod's freshness tracker (relay/freshness.ts) from other pods. */
export interface FreshnessHandler {
  /** Another pod's publishers feed these markets, in these states. */
  reported(pod: string, states: readonly SourceFreshness[]): void;
  /** Another pod fell silent for two announcements (false), or is heard again or for the first time (true). */
  pod(pod: string, alive: boolean): void;
  /** The markets this pod's publishers feed, to tell a pod that joined or once the bus is back. */
  fedHere(): SourceFreshness[];
}

/**
 * The book as the bus sees it: read to number the next image and to offer
 * what this pod holds to a new stream. Only the odds path writes it, once
 * per image, when the bus hands the image over.
 */
export type BusBook = Pick<Book, 'get' | 'next' | 'values'>;

/**
 * A note for the record that is not an odds image, as JSON: a `market`, `result` or `freshness`
 * frame as the recording pod published it (`state`), a subscriber socket's ledger event
 * (`ledger`), or what a conflated variant sent (`sent`). `src` names the pod and `n` counts its
 * notes, so a note delivered twice is written once.
 */
export interface RecordNote {
  topic: 'state' | 'ledger' | 'sent';
  src: string;
  n: number;
  /** When it happened, ms. */
  at: number;
  body: Record<string, unknown>;
}

/** One thing the record keeps: an odds image as numbered, or a note. */
export type RecordEntry = { kind: 'odds'; o: Ordered } | { kind: 'note'; note: RecordNote };

/** Entries read for the recorder: written, then acknowledged. */
export interface RecordBatch {
  readonly entries: readonly RecordEntry[];
  /**
   * When the log had handed out all it held (ms, the log's clock): every entry that reached it
   * before then is in this batch or in one before. Undefined when the batch left entries behind,
   * or the log cannot tell.
   */
  readonly drainedAt?: number;
  ack(): Promise<void> | void;
}

/** What waits for the recorder: entries, and bytes where the log knows them. */
export interface RecordBacklog {
  entries: number;
  bytes: number | undefined;
}

/**
 * Where pods put what the record keeps and the one recorder reads it: a bounded queue in the
 * process with `BUS=memory`, a JetStream stream with a durable consumer with `BUS=nats`. Appending
 * never waits: publishing is never slowed by the record. Past its bound the log drops its oldest
 * unread entries and keeps the newest (the queue counts them; the stream's bytes are a metric, so
 * an alert fires before it fills).
 */
export interface RecordLog {
  append(e: RecordEntry): void;
  /**
   * The next entries after the last acknowledged ones, at most `max`; undefined once `signal`
   * aborts, or after about `idleMs` (when given) with nothing to hand out. Once one waits, those
   * arriving within `gatherMs` join it, unless `max` wait sooner.
   */
  next(max: number, signal: AbortSignal, gatherMs?: number, idleMs?: number): Promise<RecordBatch | undefined>;
  backlog(): Promise<RecordBacklog>;
  /**
   * How long an entry handed out and never acknowledged waits before the log hands it out again
   * (to the next recorder): until then a new recorder cannot know of it. 0 where none outlives
   * its reader (the in-process queue).
   */
  readonly redeliverMs: number;
}

/**
 * How pods act as one service. `memory` is one process; `nats` shares odds
 * images and client changes between pods, and numbers each market's images
 * the same way on every pod.
 */
export interface Bus {
  readonly kind: 'memory' | 'nats';
  /** The record's log: undefined with RECORD=off. */
  readonly record: RecordLog | undefined;
  /** Connects and syncs; resolves once synced, or once it is clear the bus is away (it keeps trying). */
  start(odds: OddsHandler, clients: ClientHandler, freshness: FreshnessHandler): Promise<void>;
  /**
   * Numbers an image in its market's order, hands it to the odds handler and shares it
   * with other pods. Images of one market are numbered in the order given.
   * Returns nothing when done at once, or a promise.
   */
  publish(image: OddsImage, publishTime: number): Promise<void> | void;
  publishClient(op: StoredSetOp, client: string, mids: readonly string[]): void;
  /** Tells other pods the freshness of markets this pod's publishers feed (at most once; lost while the bus is down). */
  shareFreshness(states: readonly SourceFreshness[]): void;
  close(): Promise<void>;
}
