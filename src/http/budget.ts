import { errors, type ServiceError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { TokenBucket } from '../lib/token-bucket.js';

/** How long a key's new sockets are refused after one of its sockets was closed for abuse. */
const COOLDOWN_MS = 10_000;

export interface BudgetLimits {
  /** Messages per second one socket may send. */
  perSocket: number;
  /** Messages per second one API key may send, all its sockets together. */
  keyMessages: number;
  /** Bytes per second one API key may send, all its sockets together. */
  keyBytes: number;
  /** Per-key budgets only mean something when keys exist (AUTH=on); with AUTH=off every caller is one key. */
  perKey: boolean;
}

/** Whether a key still holds any socket: the hub's index, the one count of them. */
export interface HeldSockets {
  holds(keyId: string): boolean;
}

interface KeyBudget {
  messages: TokenBucket;
  bytes: TokenBucket;
  /** Until when new sockets of the key are refused (0: they are not). */
  coolUntil: number;
}

/**
 * What `/ws` messages may cost, spent before a message is read: one token of
 * the socket's bucket, one of its key's and its length from the key's bytes.
 * A key opening more sockets gets no more: the key's buckets are shared. A
 * key's entry is dropped when its last socket closes with its buckets full (a
 * new entry is the same); one closed while spent stays, so closing and
 * reopening sockets does not refill them. At most one entry per API key.
 */
export class Budgets {
  private readonly byKey = new Map<string, KeyBudget>();

  constructor(private readonly limits: BudgetLimits, private readonly sockets: HeldSockets, private readonly clock: Pick<Clock, 'now'>) {}

  /** A socket's own bucket; its key's entry made on the first. */
  opened(keyId: string): TokenBucket {
    if (this.limits.perKey) {
      if (!this.byKey.has(keyId)) this.byKey.set(keyId, { messages: new TokenBucket(this.limits.keyMessages, this.clock), bytes: new TokenBucket(this.limits.keyBytes, this.clock), coolUntil: 0 });
    }
    return new TokenBucket(this.limits.perSocket, this.clock);
  }

  /** After the hub closed one of the key's sockets. */
  closed(keyId: string): void {
    const k = this.byKey.get(keyId);
    if (k && !this.sockets.holds(keyId) && k.messages.full() && k.bytes.full() && k.coolUntil <= this.clock.now()) this.byKey.delete(keyId);
  }

  /**
   * A socket of the key went on sending while refused and is being closed:
   * the key's new sockets wait, so reconnecting is no way round the budget
   * (each new socket would otherwise be another round of unread frames).
   */
  abused(keyId: string): void {
    const k = this.byKey.get(keyId);
    if (k) k.coolUntil = this.clock.now() + COOLDOWN_MS;
  }

  /** Why a new socket of the key may not open (429 with Retry-After), or undefined. */
  refuseOpen(keyId: string): ServiceError | undefined {
    const wait = (this.byKey.get(keyId)?.coolUntil ?? 0) - this.clock.now();
    return wait > 0 ? errors.coolingDown(Math.ceil(wait / 1000)) : undefined;
  }

  /** Why a message of `bytes` from this socket is refused unread, or undefined when it may be read. */
  spend(keyId: string, socket: TokenBucket, bytes: number): { scope: 'socket' | 'key'; err: ServiceError } | undefined {
    if (!socket.spend()) return { scope: 'socket', err: errors.messageRate('socket', this.limits.perSocket, 'messages') };
    const k = this.byKey.get(keyId);
    if (!k) return undefined;
    if (!k.messages.spend()) return { scope: 'key', err: errors.messageRate('key', this.limits.keyMessages, 'messages') };
    if (!k.bytes.spend(bytes)) return { scope: 'key', err: errors.messageRate('key', this.limits.keyBytes, 'bytes') };
    return undefined;
  }
}
