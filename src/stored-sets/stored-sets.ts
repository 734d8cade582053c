import type pg from 'pg';
import { errors } from '../errors.js';
import { asDatabaseError } from '../db/pool.js';
import { notice } from '../odds/messages.js';
import type { Hub, OpenWatcher } from '../hub/hub.js';
import type { Subscriber } from '../hub/subscriber.js';
import { variant } from '../hub/variant.js';
import type { Bus, ClientHandler, StoredSetOp } from '../bus/types.js';
import type { Logger } from '../log.js';
import { retry } from '../lib/retry.js';
import { Fifo } from '../lib/fifo.js';
import { addMarkets, listMarketsOf, removeMarkets } from './store.js';

/** Told each time Postgres could not answer a stored-set read or change: the metrics. */
export interface DatabaseOutages {
  databaseUnavailable(): void;
}

export interface StoredSetsDeps {
  pool: pg.Pool;
  hub: Hub;
  bus: Bus;
  /** Markets a client's stored set may hold. */
  maxStored: number;
  log: Logger;
  outages: DatabaseOutages;
}

/** How long a loaded stored set serves sockets of the same client (a reconnect storm shares one query). */
const CACHE_MS = 2000;
/** Clients whose stored sets one query reads at most. */
const BATCH = 1000;
/**
 * Markets of stored sets attached to new sockets in one turn of the loop at most (one set at
 * least): a reconnect storm of sockets with full sets (2,000 markets, about 5 ms a socket) held
 * the loop for seconds, /health and every feed with it. The rest go in the next turns.
 */
export const STORED_MARKETS_PER_TURN = 4000;

/**
 * The one owner of client market sets (REST subscribe and unsubscribe): the
 * stored set in Postgres, the cached copy new sockets start from, the
 * client's live sockets on this pod, and the same change on every other pod
 * through the bus. Postgres changes first, so a refused or failed change
 * leaves sockets as they were.
 */
export class StoredSets implements OpenWatcher, ClientHandler {
  private readonly cache = new Map<string, Promise<string[]>>();
  /** Clients whose sets are asked for in this turn of the loop: read together, in one query per BATCH. */
  private pending = new Map<string, { mids: Promise<string[]>; ok: (mids: string[]) => void; fail: (err: unknown) => void }>();
  /** New sockets' stored sets, read, waiting for their turn to be attached. */
  private readonly ready = new Fifo<{ s: Subscriber; mids: readonly string[] }>();
  private attaching: NodeJS.Immediate | undefined;

  constructor(private readonly deps: StoredSetsDeps) {}

  async subscribe(client: string, mids: readonly string[]): Promise<void> {
    await this.db(addMarkets(this.deps.pool, client, mids, this.deps.maxStored));
    this.client('attach', client, [...mids]);
    this.deps.bus.publishClient('attach', client, mids);
  }

  async unsubscribe(client: string, mids: readonly string[]): Promise<void> {
    await this.db(removeMarkets(this.deps.pool, client, mids));
    this.client('detach', client, [...mids]);
    this.deps.bus.publishClient('detach', client, mids);
  }

  /** A change made on this pod or another (the bus's `ClientHandler`): this pod's sockets of the client follow it. */
  client(op: StoredSetOp, client: string, mids: string[]): void {
    this.cache.delete(client);
    for (const s of this.deps.hub.clientSubscribers(client)) {
      s.storedSetChanged();
      if (op === 'attach') this.attach(s, mids);
      else s.lose(mids);
    }
  }

  /** The client's stored set, shared by the sockets that open within a moment of each other. */
  stored(client: string): Promise<string[]> {
    let mids = this.cache.get(client);
    if (!mids) {
      mids = this.load(client);
      const held = mids;
      this.cache.set(client, held);
      const forget = () => setTimeout(() => this.cache.get(client) === held && this.cache.delete(client), CACHE_MS).unref();
      held.then(forget, () => this.cache.get(client) === held && this.cache.delete(client));
    }
    return mids;
  }

  private load(client: string): Promise<string[]> {
    // Not read yet, so it will read this change too.
    const queued = this.pending.get(client);
    if (queued) return queued.mids;
    if (!this.pending.size) setImmediate(() => this.readPending());
    let ok!: (mids: string[]) => void;
    let fail!: (err: unknown) => void;
    const mids = new Promise<string[]>((resolve, reject) => ((ok = resolve), (fail = reject)));
    this.pending.set(client, { mids, ok, fail });
    return mids;
  }

  private readPending(): void {
    const all = [...this.pending];
    this.pending = new Map();
    for (let i = 0; i < all.length; i += BATCH) {
      const part = all.slice(i, i + BATCH);
      this.db(listMarketsOf(this.deps.pool, part.map(([client]) => client))).then(
        (sets) => { for (const [client, p] of part) p.ok(sets.get(client) ?? []); },
        (err) => { for (const [, p] of part) p.fail(err); },
      );
    }
  }

  /**
   * A new socket starts with its client's stored set. If Postgres cannot
   * answer, the socket is told, and the load is retried until it works or the
   * socket closes.
   */
  opened(s: Subscriber): void {
    retry(() => this.current(s), {
      minMs: 500, maxMs: 10000, cancelled: () => s.closed,
      onRetry: (err, attempt) => {
        this.deps.log.warn('could not load a client\'s stored markets for a new socket; retrying', { client: s.client, attempt, err: (err as Error).message });
        if (attempt === 1) s.send(notice(errors.storedSetPending()));
      },
    }).then((mids) => this.queue(s, mids), () => s.loadingStoredSet(false));
  }

  /** A new socket's stored set, read: attached in its turn (`attachReady`); until then it still counts as loading. */
  private queue(s: Subscriber, mids: readonly string[]): void {
    if (s.closed || !mids.length) return s.loadingStoredSet(false);
    this.ready.push({ s, mids });
    this.attaching ??= setImmediate(() => this.attachReady());
  }

  /**
   * Attaches the stored sets read, in the order read, up to STORED_MARKETS_PER_TURN markets this
   * turn. A set that changed while it waited is read again rather than attached over the change.
   */
  private attachReady(): void {
    this.attaching = undefined;
    let left = STORED_MARKETS_PER_TURN;
    while (this.ready.size && left > 0) {
      const { s, mids } = this.ready.peek()!;
      this.ready.shift();
      if (s.closed) continue;
      if (s.storedSetMovedSinceLoad) {
        this.opened(s);
        continue;
      }
      left -= mids.length;
      this.attach(s, mids);
      s.loadingStoredSet(false);
    }
    if (this.ready.size) this.attaching = setImmediate(() => this.attachReady());
  }

  /**
   * The socket's stored set, read again when a subscribe or unsubscribe landed
   * while it loaded: that change was applied to the socket already, and an
   * older set attached after it would undo an acked unsubscribe.
   */
  private async current(s: Subscriber): Promise<string[]> {
    for (;;) {
      s.loadingStoredSet(true);
      const mids = await this.stored(s.client);
      if (s.closed || !s.storedSetMovedSinceLoad) return mids;
    }
  }

  /** Adds the markets the hub admits to one socket; the socket is told of any that did not fit. */
  private attach(s: Subscriber, mids: readonly string[]): void {
    const { admitted, refused } = this.deps.hub.admit(s, mids.filter((mid) => !s.has(mid)));
    s.subscribe(admitted, variant(s.format));
    if (refused) s.send(notice(refused));
  }

  private async db<T>(work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (err) {
      const e = asDatabaseError(err);
      if (e !== err) this.deps.outages.databaseUnavailable();
      throw e;
    }
  }
}
