import { errors, type ServiceError } from '../errors.js';
import { heldBy, type Book } from '../odds/book.js';
import { notice, type AckMessage, type ClientMessage } from '../odds/messages.js';
import type { ReadModel } from '../refdata/model.js';
import type { Broadcaster } from './broadcaster.js';
import type { Hub } from './hub.js';
import { variant, type Session } from './session.js';

export interface SocketSubscriptionsDeps {
  hub: Hub;
  bc: Broadcaster;
  book: Book;
  model: ReadModel;
}

type Ack = Omit<AckMessage, 'op' | 'id'>;
/** A request's answer: an ack, then what follows it; or a refusal of the catalogue, which changed nothing. */
export type Answer = { ack: Ack; then?: () => void } | { refused: ServiceError };

/** Event and sport filters one socket may hold: filters on events with no live market add no markets to count. */
const MAX_FILTERS = 200;

/** What a request named, in the ack's words: `market 1.1,1.2; event 30000001`. */
function describe(msg: ClientMessage): string {
  const parts: string[] = [];
  if (msg.mids?.length) parts.push(`market ${msg.mids.join(',')}`);
  if (msg.eids?.length) parts.push(`event ${msg.eids.join(',')}`);
  if (msg.sis?.length) parts.push(`sport ${msg.sis.join(',')}`);
  return parts.join('; ');
}

/**
 * A socket's own subscribe and unsubscribe requests (REST changes a client's
 * stored set instead: stored-sets/). Market IDs, event and sport filters
 * (which also take markets created later), depth and conflation per request.
 * A socket's market limit counts every market a request would add; a request
 * that would pass it changes nothing.
 */
export class SocketSubscriptions {
  constructor(private readonly deps: SocketSubscriptionsDeps) {}

  subscribe(s: Session, msg: ClientMessage): Answer {
    const { hub, bc, book } = this.deps;
    const { take, refused } = hub.admit(s, this.covered(msg), new Set(msg.mids));
    if (refused) return { refused };
    const moreFilters = (msg.eids ?? []).filter((eid) => !s.filtersOf('events').has(eid)).length + (msg.sis ?? []).filter((si) => !s.filtersOf('sports').has(si)).length;
    if (s.filtersOf('events').size + s.filtersOf('sports').size + moreFilters > MAX_FILTERS) {
      return { refused: errors.socketFilters(moreFilters, MAX_FILTERS) };
    }
    const v = variant(s.format, msg.depth ?? 0, msg.conflate ?? 0, msg.delta === true);
    for (const eid of msg.eids ?? []) hub.filter(s, 'events', eid, v);
    for (const si of msg.sis ?? []) hub.filter(s, 'sports', si, v);
    const filters = msg.eids?.length || msg.sis?.length;
    const ack: Ack = { status: 1, message: `Subscribed from ${describe(msg)}${filters ? ` (${take.length} markets)` : ''}` };
    if (msg.since) {
      let current = 0;
      for (const mid of take) {
        const e = book.get(mid);
        if (e && heldBy(msg.since, e)) current++;
      }
      ack.current = current;
    }
    // The ack goes first; each market's image right after it, before any newer frame.
    return { ack, then: () => bc.attach(s, take, v, msg.since) };
  }

  /** After the ack, the markets that went with an event or sport are listed, so a client knows what to drop. */
  unsubscribe(s: Session, msg: ClientMessage): Answer {
    const { hub, bc } = this.deps;
    for (const eid of msg.eids ?? []) hub.filter(s, 'events', eid, undefined);
    for (const si of msg.sis ?? []) hub.filter(s, 'sports', si, undefined);
    const named = new Set(msg.mids);
    const withFilters = bc.detach(s, this.covered(msg)).filter((mid) => !named.has(mid));
    const ack: Ack = { status: 1, message: `Unsubscribed from ${describe(msg)}` };
    return { ack, then: withFilters.length ? () => bc.send(s, { op: 'unsubscribed', mids: withFilters }) : undefined };
  }

  /** Markets created after a filter was set: each socket whose filter covers one takes it, if the hub admits it. */
  appeared(mid: string, eid: number, si: number): void {
    const { hub, bc } = this.deps;
    for (const [s, v] of hub.filtered(eid, si)) {
      if (s.markets.has(mid)) continue;
      const { take, refused } = hub.admit(s, [mid]);
      if (refused) bc.send(s, notice(refused));
      else bc.attach(s, take, v);
    }
  }

  /** The markets a request names: its IDs, and every market of its events and sports. */
  private covered(msg: ClientMessage): Set<string> {
    const { model } = this.deps;
    const out = new Set(msg.mids);
    for (const eid of msg.eids ?? []) for (const mid of model.eventMarkets(eid)) out.add(mid);
    for (const si of msg.sis ?? []) for (const mid of model.sportMarkets(si)) out.add(mid);
    return out;
  }
}
