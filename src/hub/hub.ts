import { CLOSE, errors, type ServiceError } from '../errors.js';
import { FORMATS, type Format } from '../odds/book.js';
import type { Session, Variant } from './session.js';

/** Anything that can be closed with a code: subscriber and publisher sockets alike. */
export interface Closable {
  end(code?: number, reason?: string): void;
}

export interface HubLimits {
  /** Sockets one API key may hold (subscribers and publishers together). */
  perKey: number;
  /** Sockets this process holds at most. */
  total: number;
  /** Per-key counting only means something when keys exist (AUTH=on). */
  countPerKey: boolean;
}

/** Who takes one market: the sessions, and each variant taken with how many take it (which topics to publish to). */
export interface MarketSubs {
  readonly sessions: Set<Session>;
  readonly variants: Map<string, { variant: Variant; count: number }>;
}

/**
 * Every open socket, once: by API key (limits, revocation), by client (REST
 * subscribe reaches all of a client's sockets), by format, and by market
 * (who takes each). Counts are the sizes of these collections, never kept
 * apart from them. The hub holds the index only; the broadcaster delivers.
 */
export class Hub {
  private readonly byKey = new Map<string, Set<Closable>>();
  private readonly byClient = new Map<string, Set<Session>>();
  private readonly byFormat: Record<Format, Set<Session>> = { json: new Set(), proto: new Set() };
  private readonly markets = new Map<string, MarketSubs>();
  /** Sessions with an event or sport filter, by that ID: markets created later are offered to them. */
  private readonly filters = { events: new Map<number, Set<Session>>(), sports: new Map<number, Set<Session>>() };
  private total = 0;

  constructor(private readonly limits: HubLimits, private readonly refused: (reason: 'per_key' | 'total') => void) {}

  /** Why a new socket for this key may not open, or undefined when it may. */
  refuse(keyId: string): ServiceError | undefined {
    if (this.total >= this.limits.total) {
      this.refused('total');
      return errors.serverFull(this.limits.total);
    }
    if (this.limits.countPerKey && (this.byKey.get(keyId)?.size ?? 0) >= this.limits.perKey) {
      this.refused('per_key');
      return errors.tooManySockets(this.limits.perKey);
    }
    return undefined;
  }

  /** A publisher socket: counted against its key's limit and closed with it on revocation. */
  addSocket(keyId: string, socket: Closable): void {
    let set = this.byKey.get(keyId);
    if (!set) this.byKey.set(keyId, (set = new Set()));
    set.add(socket);
    this.total++;
  }

  removeSocket(keyId: string, socket: Closable): void {
    const set = this.byKey.get(keyId);
    if (!set?.delete(socket)) return;
    this.total--;
    if (set.size === 0) this.byKey.delete(keyId);
  }

  open(s: Session): void {
    this.addSocket(s.keyId, s.conn);
    this.byFormat[s.format].add(s);
    let set = this.byClient.get(s.client);
    if (!set) this.byClient.set(s.client, (set = new Set()));
    set.add(s);
  }

  close(s: Session): void {
    s.closed = true;
    this.removeSocket(s.keyId, s.conn);
    this.byFormat[s.format].delete(s);
    const set = this.byClient.get(s.client);
    set?.delete(s);
    if (set?.size === 0) this.byClient.delete(s.client);
    for (const mid of s.subs.keys()) this.unindex(s, mid);
    for (const eid of s.events.keys()) this.filter(s, 'events', eid, undefined);
    for (const si of s.sports.keys()) this.filter(s, 'sports', si, undefined);
  }

  /** Sets (or, with no variant, removes) a session's filter on an event or sport. */
  filter(s: Session, kind: 'events' | 'sports', id: number, v: Variant | undefined): void {
    const index = this.filters[kind];
    let set = index.get(id);
    if (v) {
      s[kind].set(id, v);
      if (!set) index.set(id, (set = new Set()));
      set.add(s);
    } else {
      s[kind].delete(id);
      set?.delete(s);
      if (set?.size === 0) index.delete(id);
    }
  }

  /** Sessions whose filters cover a market of this event and sport, with the variant each asked for. */
  filtered(eid: number, si: number): Map<Session, Variant> {
    const out = new Map<Session, Variant>();
    for (const s of this.filters.sports.get(si) ?? []) out.set(s, s.sports.get(si)!);
    for (const s of this.filters.events.get(eid) ?? []) out.set(s, s.events.get(eid)!);
    return out;
  }

  /** Closes every socket of a revoked key. */
  closeKey(keyId: string, closed: () => void): void {
    for (const socket of [...(this.byKey.get(keyId) ?? [])]) {
      closed();
      socket.end(CLOSE.REVOKED, 'API key revoked');
    }
  }

  /** Records that a session takes a market; false when it already did the same way. */
  take(s: Session, mid: string, v: Variant): boolean {
    const held = s.subs.get(mid);
    if (held?.key === v.key) return false;
    if (held) this.unindex(s, mid);
    s.subs.set(mid, v);
    let m = this.markets.get(mid);
    if (!m) this.markets.set(mid, (m = { sessions: new Set(), variants: new Map() }));
    m.sessions.add(s);
    const taken = m.variants.get(v.key);
    if (taken) taken.count++;
    else m.variants.set(v.key, { variant: v, count: 1 });
    return true;
  }

  /** Records that a session no longer takes a market; false when it did not. */
  drop(s: Session, mid: string): boolean {
    if (!s.subs.has(mid)) return false;
    this.unindex(s, mid);
    s.subs.delete(mid);
    return true;
  }

  market(mid: string): MarketSubs | undefined {
    return this.markets.get(mid);
  }

  clientSessions(client: string): Iterable<Session> {
    return this.byClient.get(client) ?? [];
  }

  sessions(): Iterable<Session> {
    return [...this.byFormat.json, ...this.byFormat.proto];
  }

  /** Subscriber sockets open, by format. */
  count(format: Format): number {
    return this.byFormat[format].size;
  }

  get size(): number {
    return FORMATS.reduce((n, f) => n + this.byFormat[f].size, 0);
  }

  /** Every open socket, subscribers and publishers. */
  get sockets(): number {
    return this.total;
  }

  /** Market subscriptions held by open sockets. */
  subscriptions(): number {
    let n = 0;
    for (const m of this.markets.values()) n += m.sessions.size;
    return n;
  }

  private unindex(s: Session, mid: string): void {
    const m = this.markets.get(mid);
    const v = s.subs.get(mid);
    if (!m || !v) return;
    m.sessions.delete(s);
    const taken = m.variants.get(v.key);
    if (taken && --taken.count === 0) m.variants.delete(v.key);
    if (m.sessions.size === 0) this.markets.delete(mid);
  }
}
