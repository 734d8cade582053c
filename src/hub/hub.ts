import { CLOSE, errors, type Close, type ServiceError } from '../errors.js';
import { FORMATS, type Format } from '../odds/book.js';
import { Session, type FilterKind, type Variant } from './session.js';
import { passes, type Narrowing } from './narrowing.js';
import type { MarketFacts } from '../refdata/types.js';

/** Anything that can be closed with a code: subscriber and publisher sockets alike. */
export interface Closable {
  end(code?: number, reason?: string): void;
}

/** A publisher socket as the hub sees it: counted against its key, and answering its batches before any close. */
export interface Publisher {
  readonly keyId: string;
  readonly conn: Closable;
  /** Set by the hub once the socket closed: nothing may be sent on it then. */
  closed: boolean;
  /** Refuses the batches not yet started (its key was revoked); resolves once every batch is answered. */
  revoke(): Promise<void>;
  /** Takes no more batches; resolves once those it took are answered. */
  drain(): Promise<void>;
}

export interface HubLimits {
  /** Sockets one API key may hold (subscribers and publishers together). */
  perKey: number;
  /** Sockets this process holds at most. */
  total: number;
  /** Per-key counting only means something when keys exist (AUTH=on). */
  countPerKey: boolean;
  /** Markets one subscriber socket may take, however they were added. */
  markets: number;
}

/** Told of each socket one of the hub's limits refused at the handshake: the metrics. */
export interface SocketRefusals {
  socketRefused(reason: 'per_key' | 'total'): void;
}

/** Told of each socket a revoked key's revocation closes: the metrics. */
export interface RevokedCloses {
  revokedClose(): void;
}

/** Which markets have concluded: no filter or stored set adds one to a socket. */
export interface ConcludedMarkets {
  concluded(mid: string): boolean;
}

export interface HubDeps {
  refusals: SocketRefusals;
  /** The read model. */
  markets: ConcludedMarkets;
}

/**
 * What keeps per-socket state of its own beside the hub's indexes (the broadcaster's topics, the
 * sweep's watch, the stored sets), told of each subscriber socket the hub opens and closes.
 */
export interface SessionWatcher {
  opened?(s: Session): void;
  closed?(s: Session): void;
}

/**
 * One variant of a market that sockets take, and how many take it. The object lives exactly as
 * long as someone takes the variant, so what others key on it (the broadcaster's delta bases)
 * cannot outgrow the subscriptions.
 */
export interface Taken {
  readonly variant: Variant;
  readonly count: number;
}

/** Who takes one market: the sessions, and each variant taken with how many take it (which topics to publish to). */
interface MarketSubs {
  readonly sessions: Set<Session>;
  readonly variants: Map<string, { readonly variant: Variant; count: number }>;
}

/** A market's takers as others see them: only the hub's take and drop change who takes a market. */
export interface MarketTakers {
  readonly sessions: ReadonlySet<Session>;
  readonly variants: ReadonlyMap<string, Taken>;
}

/**
 * Every open socket, once, and the one owner of its life: opened, closed,
 * revoked and shut down here, each close one value of the catalogue (CLOSE).
 * Indexed by API key (limits, revocation), subscribers also by client (REST
 * subscribe reaches all of a client's sockets), by format, and by market
 * (who takes each). Counts are the sizes of these collections, never kept
 * apart from them. The hub holds the index; the broadcaster delivers.
 */
export class Hub {
  private readonly byKey = new Map<string, Set<Session | Publisher>>();
  private readonly publishers = new Set<Publisher>();
  private readonly byClient = new Map<string, Set<Session>>();
  private readonly byFormat: Record<Format, Set<Session>> = { json: new Set(), proto: new Set() };
  private readonly markets = new Map<string, MarketSubs>();
  /**
   * Sessions with an event or sport filter, by that ID, with the filter's narrowing (undefined:
   * every market): markets created later are offered to them.
   */
  private readonly filters = { events: new Map<number, Map<Session, Narrowing | undefined>>(), sports: new Map<number, Map<Session, Narrowing | undefined>>() };
  private readonly watchers: SessionWatcher[] = [];

  constructor(private readonly limits: HubLimits, private readonly deps: HubDeps) {}

  /** Told of every subscriber socket opened and closed from now on, in the order added. */
  watch(watcher: SessionWatcher): void {
    this.watchers.push(watcher);
  }

  /** Whether a key holds any socket, subscriber or publisher. */
  holds(keyId: string): boolean {
    return this.byKey.has(keyId);
  }

  /** Why a new socket for this key may not open, or undefined when it may. */
  refuse(keyId: string): ServiceError | undefined {
    if (this.sockets >= this.limits.total) {
      this.deps.refusals.socketRefused('total');
      return errors.serverFull(this.limits.total);
    }
    if (this.limits.countPerKey && (this.byKey.get(keyId)?.size ?? 0) >= this.limits.perKey) {
      this.deps.refusals.socketRefused('per_key');
      return errors.tooManySockets(this.limits.perKey);
    }
    return undefined;
  }

  /** A socket opened (uWS's open callback): counted against its key's limit from now on. */
  open(socket: Session | Publisher): void {
    let keyed = this.byKey.get(socket.keyId);
    if (!keyed) this.byKey.set(socket.keyId, (keyed = new Set()));
    keyed.add(socket);
    if (!(socket instanceof Session)) {
      this.publishers.add(socket);
      return;
    }
    this.byFormat[socket.format].add(socket);
    let set = this.byClient.get(socket.client);
    if (!set) this.byClient.set(socket.client, (set = new Set()));
    set.add(socket);
    for (const w of this.watchers) w.opened?.(socket);
  }

  /** A socket closed (uWS's close callback): out of every index, with what it took. */
  close(socket: Session | Publisher): void {
    if (socket instanceof Session) socket.close();
    else socket.closed = true;
    const keyed = this.byKey.get(socket.keyId);
    keyed?.delete(socket);
    if (keyed?.size === 0) this.byKey.delete(socket.keyId);
    if (!(socket instanceof Session)) {
      this.publishers.delete(socket);
      return;
    }
    const s = socket;
    this.byFormat[s.format].delete(s);
    const set = this.byClient.get(s.client);
    set?.delete(s);
    if (set?.size === 0) this.byClient.delete(s.client);
    for (const [mid, v] of s.markets) this.unindex(s, mid, v);
    for (const kind of ['events', 'sports'] as const) for (const id of [...s.filtersOf(kind).keys()]) this.filter(s, kind, id, undefined);
    for (const w of this.watchers) w.closed?.(s);
  }

  /**
   * Sets (or, with no variant, removes) a session's filter on an event or sport, narrowed to some
   * of its markets or not; set again, it replaces the one before.
   */
  filter(s: Session, kind: FilterKind, id: number, v: Variant | undefined, narrowing?: Narrowing): void {
    const index = this.filters[kind];
    let held = index.get(id);
    s.setFilter(kind, id, v);
    if (v) {
      if (!held) index.set(id, (held = new Map()));
      held.set(s, narrowing);
    } else {
      held?.delete(s);
      if (held?.size === 0) index.delete(id);
    }
  }

  /** Sessions whose filters cover a market of this event and sport with these facts, with the variant each asked for. */
  filtered(eid: number, si: number, facts: MarketFacts): Map<Session, Variant> {
    const out = new Map<Session, Variant>();
    for (const [s, n] of this.filters.sports.get(si) ?? []) if (passes(n, facts)) out.set(s, s.filtersOf('sports').get(si)!);
    for (const [s, n] of this.filters.events.get(eid) ?? []) if (passes(n, facts)) out.set(s, s.filtersOf('events').get(eid)!);
    return out;
  }

  /** Closes a socket on the server's initiative; one already closed is left alone (uWS throws on it). */
  end(socket: Session | Publisher, close: Close): void {
    if (socket instanceof Session) socket.end(close.code, close.reason);
    else if (!socket.closed) socket.conn.end(close.code, close.reason);
  }

  /** Closes every socket of a revoked key; a publisher first refuses the batches it has not started. */
  revoke(keyId: string, closes: RevokedCloses): void {
    for (const socket of [...(this.byKey.get(keyId) ?? [])]) {
      closes.revokedClose();
      if (socket instanceof Session) this.end(socket, CLOSE.REVOKED);
      else void socket.revoke().then(() => this.end(socket, CLOSE.REVOKED));
    }
  }

  /** Shutdown, publishers first: each answers every batch it took, then closes. */
  async drainPublishers(): Promise<void> {
    await Promise.all([...this.publishers].map(async (p) => {
      await p.drain();
      this.end(p, CLOSE.GOING_AWAY);
    }));
  }

  /** Shutdown, last: every subscriber socket closes, to reconnect to another pod. */
  closeSubscribers(): void {
    for (const s of this.sessions()) this.end(s, CLOSE.GOING_AWAY);
  }

  /**
   * Which of `mids` a socket takes: the one place its market limit and the concluded-market rule
   * apply, however markets come (a subscribe, an event or sport filter, the client's stored set).
   * Markets it holds pass and cost nothing; a concluded market is left out unless the request
   * `named` it; the rest fit in order while there is room, and any past it make `refused`.
   */
  admit(s: Session, mids: Iterable<string>, named: ReadonlySet<string> = NONE): { take: string[]; refused?: ServiceError } {
    const take: string[] = [];
    const over: string[] = [];
    let room = this.limits.markets - s.markets.size;
    for (const mid of mids) {
      if (s.markets.has(mid)) take.push(mid);
      else if (this.deps.markets.concluded(mid) && !named.has(mid)) continue;
      else if (room > 0) {
        room--;
        take.push(mid);
      } else over.push(mid);
    }
    return over.length ? { take, refused: errors.socketMarkets(over, this.limits.markets) } : { take };
  }

  /** Markets one socket may take: also what bounds a subscribe's `since` as it is decoded. */
  get maxMarkets(): number {
    return this.limits.markets;
  }

  /** A session takes a market (its topics follow in the session); false when it already did the same way. */
  take(s: Session, mid: string, v: Variant): boolean {
    const held = s.markets.get(mid);
    if (!s.take(mid, v)) return false;
    if (held) this.unindex(s, mid, held);
    let m = this.markets.get(mid);
    if (!m) this.markets.set(mid, (m = { sessions: new Set(), variants: new Map() }));
    m.sessions.add(s);
    const taken = m.variants.get(v.key);
    if (taken) taken.count++;
    else m.variants.set(v.key, { variant: v, count: 1 });
    return true;
  }

  /** A session no longer takes a market; false when it did not. */
  drop(s: Session, mid: string): boolean {
    const held = s.markets.get(mid);
    if (!held || !s.drop(mid)) return false;
    this.unindex(s, mid, held);
    return true;
  }

  market(mid: string): MarketTakers | undefined {
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
    return this.size + this.publishers.size;
  }

  /** Market subscriptions held by open sockets. */
  subscriptions(): number {
    let n = 0;
    for (const m of this.markets.values()) n += m.sessions.size;
    return n;
  }

  private unindex(s: Session, mid: string, v: Variant): void {
    const m = this.markets.get(mid);
    if (!m) return;
    m.sessions.delete(s);
    const taken = m.variants.get(v.key);
    if (taken && --taken.count === 0) m.variants.delete(v.key);
    if (m.sessions.size === 0) this.markets.delete(mid);
  }
}

const NONE: ReadonlySet<string> = new Set();
