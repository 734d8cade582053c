import { CLOSE, errors, type Close, type ServiceError } from '../errors.js';
import { FORMATS, type Format } from '../odds/book.js';
import type { MarketIndex } from './market-index.js';
import { Subscriber } from './subscriber.js';

/** Anything that can be closed with a code: subscriber and publisher sockets alike. */
export interface Closable {
  end(code?: number, reason?: string): void;
}

/** A publisher socket as the hub sees it: counted against its key, and answering its batches before any close. */
export interface PublisherSocket {
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
  /** Who takes each market, written by the subscribers themselves. */
  index: MarketIndex<Subscriber>;
}

/** What starts work for a subscriber socket the hub opened (the stored sets, which load its client's markets); it looks at `closed` itself. */
export interface OpenWatcher {
  opened(s: Subscriber): void;
}

/**
 * Every open socket, once: opened, closed, revoked and shut down here, each
 * close one value of the catalogue (CLOSE). Indexed by API key (limits,
 * revocation), subscribers also by client (REST subscribe reaches all of a
 * client's sockets) and by format; who takes each market is the market index,
 * which the subscribers write. Counts are the sizes of these collections,
 * never kept apart from them. What a subscriber holds and is sent is its own
 * (subscriber.ts); the hub only admits markets to it, under one limit.
 */
export class Hub {
  private readonly byKey = new Map<string, Set<Subscriber | PublisherSocket>>();
  private readonly publishers = new Set<PublisherSocket>();
  private readonly byClient = new Map<string, Set<Subscriber>>();
  private readonly byFormat: Record<Format, Set<Subscriber>> = { json: new Set(), proto: new Set() };
  private readonly watchers: OpenWatcher[] = [];

  constructor(private readonly limits: HubLimits, private readonly deps: HubDeps) {}

  /** Told of every subscriber socket opened from now on. */
  watch(watcher: OpenWatcher): void {
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

  /** A socket opened (uWS's open callback): counted against its key's limit from now on; a subscriber starts. */
  open(socket: Subscriber | PublisherSocket): void {
    let keyed = this.byKey.get(socket.keyId);
    if (!keyed) this.byKey.set(socket.keyId, (keyed = new Set()));
    keyed.add(socket);
    if (!(socket instanceof Subscriber)) {
      this.publishers.add(socket);
      return;
    }
    this.byFormat[socket.format].add(socket);
    let set = this.byClient.get(socket.client);
    if (!set) this.byClient.set(socket.client, (set = new Set()));
    set.add(socket);
    socket.open();
    for (const w of this.watchers) w.opened(socket);
  }

  /** A socket closed with `code` (uWS's close callback): out of every index; a subscriber takes itself out of the market index. */
  close(socket: Subscriber | PublisherSocket, code: number): void {
    if (socket instanceof Subscriber) socket.close(code);
    else socket.closed = true;
    const keyed = this.byKey.get(socket.keyId);
    keyed?.delete(socket);
    if (keyed?.size === 0) this.byKey.delete(socket.keyId);
    if (!(socket instanceof Subscriber)) {
      this.publishers.delete(socket);
      return;
    }
    this.byFormat[socket.format].delete(socket);
    const set = this.byClient.get(socket.client);
    set?.delete(socket);
    if (set?.size === 0) this.byClient.delete(socket.client);
  }

  /** Closes a socket on the server's initiative; one already closed is left alone (uWS throws on it). */
  end(socket: Subscriber | PublisherSocket, close: Close): void {
    if (socket instanceof Subscriber) socket.end(close.code, close.reason);
    else if (!socket.closed) socket.conn.end(close.code, close.reason);
  }

  /** Closes every socket of a revoked key; a publisher first refuses the batches it has not started. */
  revoke(keyId: string, closes: RevokedCloses): void {
    for (const socket of [...(this.byKey.get(keyId) ?? [])]) {
      closes.revokedClose();
      if (socket instanceof Subscriber) this.end(socket, CLOSE.REVOKED);
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
    for (const s of this.subscribers()) this.end(s, CLOSE.GOING_AWAY);
  }

  /**
   * Which of `mids` a socket takes: the one place its market limit and the concluded-market rule
   * apply, however markets come (a subscribe, an event or sport filter, the client's stored set).
   * Markets it holds pass and cost nothing; a concluded market is left out unless the request
   * `named` it; the rest fit in order while there is room, and any past it make `refused`.
   */
  admit(s: Subscriber, mids: Iterable<string>, named: ReadonlySet<string> = NONE): { admitted: string[]; refused?: ServiceError } {
    const admitted: string[] = [];
    const over: string[] = [];
    let room = this.limits.markets - s.size;
    for (const mid of mids) {
      if (s.has(mid)) admitted.push(mid);
      else if (this.deps.markets.concluded(mid) && !named.has(mid)) continue;
      else if (room > 0) {
        room--;
        admitted.push(mid);
      } else over.push(mid);
    }
    return over.length ? { admitted, refused: errors.socketMarkets(over, this.limits.markets) } : { admitted };
  }

  /** Markets one socket may take: also what bounds a subscribe's `since` as it is decoded. */
  get maxMarkets(): number {
    return this.limits.markets;
  }

  clientSubscribers(client: string): Iterable<Subscriber> {
    return this.byClient.get(client) ?? [];
  }

  subscribers(): Iterable<Subscriber> {
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
    return this.deps.index.subscriptions();
  }
}

const NONE: ReadonlySet<string> = new Set();
