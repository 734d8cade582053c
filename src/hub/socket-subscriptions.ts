import { errors } from '../errors.js';
import { heldBy, type Book } from '../odds/book.js';
import { notice, refusal, type AckMessage, type ClientMessage, type Since } from '../odds/messages.js';
import type { ReadModel } from '../refdata/model.js';
import type { Hub } from './hub.js';
import type { MarketIndex } from './market-index.js';
import type { Subscriber } from './subscriber.js';
import { variant } from './variant.js';
import { describeNarrowing, passes, type Narrowing } from './narrowing.js';

export interface SocketSubscriptionsDeps {
  hub: Hub;
  index: MarketIndex<Subscriber>;
  book: Book;
  model: ReadModel;
}

/**
 * A socket's request naming markets, decoded from its message at the socket's edge (http/ws.ts):
 * by ID, and every market of some events and sports, including markets created later.
 */
export interface MarketsRequest {
  /** Echoed in the request's ack. */
  readonly requestId: number;
  readonly marketIds: readonly string[];
  readonly eventIds: readonly number[];
  readonly sportIds: readonly number[];
}

/** A subscribe request: what it names, and how the socket takes those markets. */
export interface SubscribeRequest extends MarketsRequest {
  /** Ladder levels a side; 0 all. */
  readonly depth: number;
  /** At most one frame per market per this many ms; 0 every update. */
  readonly conflateMs: number;
  /** After the first image, what changed rather than whole images. */
  readonly deltas: boolean;
  /** What a resuming client holds: markets it holds the newest image of get none. */
  readonly resume?: Since;
  /** Which markets of its events and sports it takes (its market IDs are taken as named); absent: all. */
  readonly narrowing?: Narrowing;
}

/** A decoded subscribe's narrowing keys (`tys`, `ccs`, `bts`, `tip`) in the hub's words; undefined when it has none. */
export function narrowingOf(msg: Pick<ClientMessage, 'tys' | 'ccs' | 'bts' | 'tip'>): Narrowing | undefined {
  if (!msg.tys && !msg.ccs && !msg.bts && msg.tip === undefined) return undefined;
  return {
    ...(msg.tys ? { types: new Set(msg.tys) } : {}), ...(msg.ccs ? { countries: new Set(msg.ccs) } : {}),
    ...(msg.bts ? { bettingTypes: new Set(msg.bts) } : {}), ...(msg.tip === undefined ? {} : { turnInPlay: msg.tip }),
  };
}

/** Event and sport filters one socket may hold: filters on events with no live market add no markets to count. */
const MAX_FILTERS = 200;

/** What a request named, in the ack's words: `market 1.1,1.2; event 30000001`, and any narrowing: `(ty match-odd; cc GB)`. */
function describe(req: MarketsRequest & { narrowing?: Narrowing }): string {
  const parts: string[] = [];
  if (req.marketIds.length) parts.push(`market ${req.marketIds.join(',')}`);
  if (req.eventIds.length) parts.push(`event ${req.eventIds.join(',')}`);
  if (req.sportIds.length) parts.push(`sport ${req.sportIds.join(',')}`);
  return parts.join('; ') + (req.narrowing ? ` (${describeNarrowing(req.narrowing)})` : '');
}

/**
 * A socket's own subscribe and unsubscribe requests, each answered here
 * (REST changes a client's stored set instead: stored-sets/). Market IDs,
 * event and sport filters (which also take markets created later), depth and
 * conflation per request. A socket's market limit counts every market a
 * request would add; a request that would pass it changes nothing.
 */
export class SocketSubscriptions {
  constructor(private readonly deps: SocketSubscriptionsDeps) {}

  /** Answers the request: refused with nothing changed, or the ack and then each market's image. */
  subscribe(s: Subscriber, req: SubscribeRequest): void {
    const { hub, book } = this.deps;
    const { admitted, refused } = hub.admit(s, this.covered(req), new Set(req.marketIds));
    if (refused) return s.send(refusal(req.requestId, refused));
    const moreFilters = req.eventIds.filter((eid) => !s.filtersOf('events').has(eid)).length + req.sportIds.filter((si) => !s.filtersOf('sports').has(si)).length;
    if (s.filtersOf('events').size + s.filtersOf('sports').size + moreFilters > MAX_FILTERS) {
      return s.send(refusal(req.requestId, errors.socketFilters(moreFilters, MAX_FILTERS)));
    }
    const v = variant(s.format, req.depth, req.conflateMs, req.deltas);
    for (const eid of req.eventIds) s.setFilter('events', eid, v, req.narrowing);
    for (const si of req.sportIds) s.setFilter('sports', si, v, req.narrowing);
    const filters = req.eventIds.length || req.sportIds.length;
    const ack: AckMessage = { op: 'ack', id: req.requestId, status: 1, message: `Subscribed from ${describe(req)}${filters ? ` (${admitted.length} markets)` : ''}` };
    if (req.resume) {
      let current = 0;
      for (const mid of admitted) {
        const e = book.get(mid);
        if (e && heldBy(req.resume, e)) current++;
      }
      ack.current = current;
    }
    // The ack goes first; each market's image right after it, before any newer frame.
    s.send(ack);
    s.subscribe(admitted, v, req.resume);
  }

  /** Answers the request with its ack; then the markets that went with an event or sport are listed, so a client knows what to drop. */
  unsubscribe(s: Subscriber, req: MarketsRequest): void {
    for (const eid of req.eventIds) s.setFilter('events', eid, undefined);
    for (const si of req.sportIds) s.setFilter('sports', si, undefined);
    const named = new Set(req.marketIds);
    const withFilters = s.unsubscribe(this.covered(req)).filter((mid) => !named.has(mid));
    s.send({ op: 'ack', id: req.requestId, status: 1, message: `Unsubscribed from ${describe(req)}` });
    if (withFilters.length) s.send({ op: 'unsubscribed', mids: withFilters });
  }

  /**
   * Markets created after a filter was set (or reopened, or whose terms moved): each socket whose
   * filter covers one takes it, if the hub admits it.
   */
  appeared(mid: string, eid: number, si: number): void {
    const { hub, index, model } = this.deps;
    const facts = model.factsOf(mid);
    if (!facts) return;
    for (const [s, v] of index.filtered(eid, si, facts)) {
      if (s.has(mid)) continue;
      const { admitted, refused } = hub.admit(s, [mid]);
      if (refused) s.send(notice(refused));
      else s.subscribe(admitted, v);
    }
  }

  /** Markets that concluded: every socket that takes them loses them, and is told. */
  concluded(mids: readonly string[]): void {
    const bySubscriber = new Map<Subscriber, string[]>();
    for (const mid of mids) {
      for (const s of this.deps.index.market(mid)?.subscribers ?? []) {
        const list = bySubscriber.get(s);
        if (list) list.push(mid);
        else bySubscriber.set(s, [mid]);
      }
    }
    for (const [s, list] of bySubscriber) s.lose(list);
  }

  /** The markets a request names: its IDs, and every market of its events and sports that passes its narrowing. */
  private covered(req: MarketsRequest & { narrowing?: Narrowing }): Set<string> {
    const { model } = this.deps;
    const out = new Set(req.marketIds);
    const cover = (mid: string) => {
      const facts = req.narrowing && model.factsOf(mid);
      if (!req.narrowing || (facts && passes(req.narrowing, facts))) out.add(mid);
    };
    for (const eid of req.eventIds) for (const mid of model.eventMarkets(eid)) cover(mid);
    for (const si of req.sportIds) for (const mid of model.sportMarkets(si)) cover(mid);
    return out;
  }
}
