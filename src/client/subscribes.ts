import type { AckMessage, ClientMessage, Since } from '../odds/messages.js';
import type { BettingType, MarketType } from '../refdata/types.js';

/** What a subscribe asks for: markets, events and sports (at least one), and how. */
export interface Subscription {
  mids?: string[];
  eids?: number[];
  sis?: number[];
  /** Ladder levels a side, 1 to 10; absent: all. */
  depth?: number;
  /** At most one frame per market per this many ms (100 to 60000); absent or 0: every update. */
  conflate?: number;
  /** After each market's first image, `delta` frames (what changed); the client's book applies them. */
  delta?: boolean;
  /** Only the markets of `eids` and `sis` of these types, countries, betting types, or turning in play (true) or not (false). */
  tys?: MarketType[];
  ccs?: string[];
  bts?: BettingType[];
  tip?: boolean;
}

export type Removal = Pick<Subscription, 'mids' | 'eids' | 'sis'>;

/** A request the server refused (ack status 0): the message is the server's, the ack is kept. */
export class RefusedError extends Error {
  constructor(readonly ack: AckMessage) {
    super(ack.message);
    this.name = 'RefusedError';
  }
}

interface Waiter {
  resolve(ack: AckMessage): void;
  reject(err: Error): void;
}

/** A subscribe the client asks for again on every connection until it is undone. */
interface Wanted {
  sub: Subscription;
  /** Callers still waiting for its first ack. */
  waiters: Waiter[];
}

/** An unsubscribe or ping: answered once, on whichever connection first takes it. */
interface OneOff {
  msg: Omit<ClientMessage, 'id'>;
  waiter: Waiter;
}

type Send = (msg: ClientMessage) => void;

const named = (s: Removal): boolean => !!(s.mids?.length || s.eids?.length || s.sis?.length);
const without = <T>(xs: T[] | undefined, gone: readonly T[] | undefined): T[] | undefined =>
  xs && gone?.length ? xs.filter((x) => !gone.includes(x)) : xs;

/** A subscription's keys as the subscribe request carries them, empty lists and absent options left out. */
export function subscribeOf(sub: Subscription): Omit<ClientMessage, 'op' | 'id'> {
  const { mids, eids, sis, depth, conflate, delta, tys, ccs, bts, tip } = sub;
  const msg: Omit<ClientMessage, 'op' | 'id'> = {};
  if (mids?.length) msg.mids = mids;
  if (eids?.length) msg.eids = eids;
  if (sis?.length) msg.sis = sis;
  if (tys?.length) msg.tys = tys;
  if (ccs?.length) msg.ccs = ccs;
  if (bts?.length) msg.bts = bts;
  if (tip !== undefined) msg.tip = tip;
  if (depth !== undefined) msg.depth = depth;
  if (conflate !== undefined) msg.conflate = conflate;
  if (delta) msg.delta = true;
  return msg;
}

/**
 * The client's requests: the subscribes it keeps (replayed with `since` on
 * every connection), one-off requests waiting for a connection, and the ids
 * of those sent and not yet acked on the current one.
 */
export class Requests {
  private wanted: Wanted[] = [];
  private queue: OneOff[] = [];
  private sent = new Map<number, Wanted | OneOff>();
  private lastId = 0;
  /** The markets the kept subscribes name, worked out again after they change. */
  private namedMids: Set<string> | undefined;

  get subscriptions(): readonly Subscription[] {
    return this.wanted.map((w) => w.sub);
  }

  /** Whether a kept subscribe names this market. */
  names(mid: string): boolean {
    this.namedMids ??= new Set(this.wanted.flatMap((w) => w.sub.mids ?? []));
    return this.namedMids.has(mid);
  }

  /** Whether a kept subscribe takes markets by event or sport, which frames do not name. */
  get filtered(): boolean {
    return this.wanted.some((w) => w.sub.eids?.length || w.sub.sis?.length);
  }

  subscribe(sub: Subscription, send: Send | undefined): Promise<AckMessage> {
    return new Promise((resolve, reject) => {
      const w: Wanted = { sub: { ...sub }, waiters: [{ resolve, reject }] };
      this.wanted.push(w);
      this.namedMids = undefined;
      if (send) this.sendWanted(w, send, undefined);
    });
  }

  oneOff(msg: Omit<ClientMessage, 'id'>, send: Send | undefined): Promise<AckMessage> {
    return new Promise((resolve, reject) => {
      const o: OneOff = { msg, waiter: { resolve, reject } };
      if (send) this.sendOneOff(o, send);
      else this.queue.push(o);
    });
  }

  /** A new connection: every kept subscribe (saying what the client holds), then the waiting one-offs. */
  replay(send: Send, since: (sub: Subscription) => Since | undefined): void {
    for (const w of this.wanted) this.sendWanted(w, send, since(w.sub));
    for (const o of this.queue.splice(0)) this.sendOneOff(o, send);
  }

  /** Settles the request an ack answers; false when it answers none (id 0: a message the server could not read). */
  settle(ack: AckMessage): boolean {
    const req = this.sent.get(ack.id);
    if (!req) return false;
    this.sent.delete(ack.id);
    if ('msg' in req) {
      if (ack.status === 1) req.waiter.resolve(ack);
      else req.waiter.reject(new RefusedError(ack));
      return true;
    }
    // A refused subscribe changed nothing, so there is nothing to ask for again.
    if (ack.status === 0) {
      this.wanted = this.wanted.filter((w) => w !== req);
      this.namedMids = undefined;
    }
    for (const waiter of req.waiters.splice(0)) {
      if (ack.status === 1) waiter.resolve(ack);
      else waiter.reject(new RefusedError(ack));
    }
    return true;
  }

  /** The kept subscribe an ack answers, if it answers one (ask before `settle`). */
  answers(id: number): Subscription | undefined {
    const req = this.sent.get(id);
    return req && !('msg' in req) ? req.sub : undefined;
  }

  /** The kept subscribe a market came with: the one naming it, else (a market of an event or sport) the first with deltas. */
  covering(mid: string): Subscription | undefined {
    return this.wanted.find((w) => w.sub.mids?.includes(mid))?.sub ?? this.wanted.find((w) => w.sub.delta && !w.sub.mids?.length)?.sub;
  }

  /** Stops asking for these markets, events and sports; a kept subscribe left naming nothing is dropped. */
  forget(removal: Removal): void {
    this.namedMids = undefined;
    const inFlight = new Set(this.sent.values());
    this.wanted = this.wanted.filter((w) => {
      w.sub = { ...w.sub, mids: without(w.sub.mids, removal.mids), eids: without(w.sub.eids, removal.eids), sis: without(w.sub.sis, removal.sis) };
      if (named(w.sub)) return true;
      if (!inFlight.has(w)) for (const waiter of w.waiters.splice(0)) waiter.reject(new Error('unsubscribed before the subscribe was sent'));
      return false;
    });
  }

  /** The connection is gone: one-offs it never answered wait for the next; kept subscribes are replayed anyway. */
  lost(): void {
    const unanswered = [...this.sent.values()].filter((r): r is OneOff => 'msg' in r);
    this.queue.unshift(...unanswered);
    this.sent.clear();
  }

  /** The client stopped for good: every caller still waiting is told. */
  fail(err: Error): void {
    for (const w of this.wanted) for (const waiter of w.waiters.splice(0)) waiter.reject(err);
    for (const o of this.queue.splice(0)) o.waiter.reject(err);
    for (const r of this.sent.values()) if ('msg' in r) r.waiter.reject(err);
    this.sent.clear();
  }

  private id(): number {
    this.lastId = this.lastId >= 0xffffffff ? 1 : this.lastId + 1;
    return this.lastId;
  }

  private sendWanted(w: Wanted, send: Send, since: Since | undefined): void {
    const id = this.id();
    const msg: ClientMessage = { op: 'subscribe', id, ...subscribeOf(w.sub) };
    if (since) msg.since = since;
    this.sent.set(id, w);
    send(msg);
  }

  private sendOneOff(o: OneOff, send: Send): void {
    const id = this.id();
    this.sent.set(id, o);
    send({ ...o.msg, id } as ClientMessage);
  }
}
