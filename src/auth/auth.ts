import { timingSafeEqual } from 'node:crypto';
import type pg from 'pg';
import { errors, type ServiceError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { TokenBucket } from '../lib/token-bucket.js';
import { retry } from '../lib/retry.js';
import type { Component } from '../lib/component.js';
import type { Logger } from '../log.js';
import type { AuthMetrics } from '../metrics/auth.js';
import type { FailedKeys } from './failures.js';
import { hashSecret, loadKeys, parseToken, type Role } from './keys.js';

export interface Principal {
  readonly keyId: string;
  readonly client: string;
  readonly role: Role;
}

/** With AUTH=off every caller is this one client, allowed everything. */
export const PUBLIC: Principal = Object.freeze({ keyId: 'public', client: 'public', role: 'admin' });

interface HeldKey {
  principal: Principal;
  hash: Buffer;
}

/** Told when a live key is revoked or deleted, so its sockets can be closed. */
export interface KeyRevocations {
  revoked(keyId: string): void;
}

/** Compared against when the key ID is unknown, so a miss takes as long as a hit. */
const DUMMY = hashSecret('no such key');

/**
 * Who is calling, and may they. Live keys are held in memory (loaded at start,
 * reloaded on NOTIFY), so checking one costs a hash and a map lookup, never a
 * query. REST calls also draw on a token bucket per key.
 */
export class Auth {
  private keys = new Map<string, HeldKey>();
  private buckets = new Map<string, TokenBucket>();
  private wanted = new Set<string>();
  private wantAll = false;
  private refreshing: Promise<boolean> | undefined;
  /** Aborted at shutdown: a reload waiting out its backoff gives up, since the pool it reads is closing. */
  private readonly running = new AbortController();

  constructor(
    readonly enabled: boolean,
    /** REST requests per second per key; 0 turns the limit off. */
    private readonly restRate: number,
    private readonly metrics: AuthMetrics,
    private readonly revocations: KeyRevocations,
    /** Wrong keys, throttled per address and per key ID. */
    private readonly failures: FailedKeys,
    /** What the REST rate limit's buckets refill by. */
    private readonly clock: Pick<Clock, 'now'>,
  ) {}

  /** False once this pod has dropped the key (revoked or deleted); always true with AUTH=off. */
  live(keyId: string): boolean {
    return !this.enabled || this.keys.has(keyId);
  }

  /**
   * Reloads keys after a NOTIFY (some IDs) or a reconnect (all). A reload that
   * fails is retried with backoff until it succeeds, so a revoked key never
   * keeps working because Postgres blinked; requests meanwhile fold into one.
   * Resolves true once every key asked for so far is held as Postgres had it; false when stopped first.
   */
  refresh(db: Pick<pg.Pool, 'query'>, ids: readonly string[] | 'all', log: Logger): Promise<boolean> {
    if (this.running.signal.aborted) return Promise.resolve(false);
    if (ids === 'all') this.wantAll = true;
    else for (const id of ids) this.wanted.add(id);
    this.refreshing ??= retry(async () => {
      while (this.wantAll || this.wanted.size) {
        if (this.wantAll) {
          this.wantAll = false;
          this.wanted.clear();
          await this.loadAll(db).catch((err) => { this.wantAll = true; throw err; });
        } else {
          const ids = [...this.wanted];
          this.wanted.clear();
          await this.reload(db, ids).catch((err) => { for (const id of ids) this.wanted.add(id); throw err; });
        }
      }
    }, { minMs: 200, maxMs: 5000, signal: this.running.signal, onRetry: (err, attempt) => log.warn('api key reload failed; retrying', { attempt, err: (err as Error).message }) })
      // It gives up only when stopped.
      .then(() => true, () => false)
      .finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  /** Shut down: no reload starts, and one under way gives up at its next wait. */
  stop(): void {
    this.running.abort();
  }

  async loadAll(db: Pick<pg.Pool, 'query'>): Promise<void> {
    const rows = await loadKeys(db);
    const before = new Set(this.keys.keys());
    this.keys = new Map(rows.filter((k) => !k.revokedAt).map((k) => [k.id, { hash: k.hash, principal: { keyId: k.id, client: k.client, role: k.role } }]));
    for (const id of before) {
      if (this.keys.has(id)) continue;
      this.buckets.delete(id);
      this.revocations.revoked(id);
    }
  }

  async reload(db: Pick<pg.Pool, 'query'>, ids: string[]): Promise<void> {
    const rows = new Map((await loadKeys(db, ids)).map((k) => [k.id, k]));
    for (const id of ids) {
      const k = rows.get(id);
      if (k && !k.revokedAt) this.keys.set(id, { hash: k.hash, principal: { keyId: id, client: k.client, role: k.role } });
      else this.drop(id);
    }
  }

  /**
   * Stops honouring a key this pod held as live: its NOTIFY said it was
   * revoked or deleted, or Postgres showed it so to a publisher's transaction
   * before the NOTIFY arrived. Revocation is final, so either is enough.
   */
  drop(keyId: string): void {
    if (!this.keys.delete(keyId)) return;
    this.buckets.delete(keyId);
    this.revocations.revoked(keyId);
  }

  /**
   * The caller behind a token, if it may act in `need`; 401 or 403 otherwise.
   * A wrong key is counted against the caller's address (`address`, worked
   * out only then) and the key ID it names, and answered 429 once either has
   * used up its attempts; a right key is never held back by them.
   */
  authenticate(token: string | undefined, need: Role, address: () => string): Principal {
    if (!this.enabled) return PUBLIC;
    if (!token) return this.refuse('missing', errors.keyMissing());
    const parsed = parseToken(token);
    const live = parsed && this.keys.get(parsed.id);
    const proof = hashSecret(parsed?.secret ?? token);
    if (!timingSafeEqual(proof, live?.hash ?? DUMMY) || !live) {
      const throttled = this.failures.failed(address(), parsed?.id, parsed ? 'unknown or revoked key' : 'not a key');
      if (!throttled) return this.refuse('unknown', errors.keyUnknown());
      this.metrics.rateLimited.inc({ scope: 'wrong_key' });
      throw throttled;
    }
    const { role } = live.principal;
    if (role !== need && role !== 'admin') return this.refuse('forbidden', errors.roleForbidden(role, need));
    return live.principal;
  }

  /** Spends one REST request of the caller's allowance, or answers 429 with when to retry. */
  limit(p: Principal): void {
    if (this.restRate <= 0) return;
    let b = this.buckets.get(p.keyId);
    if (!b) this.buckets.set(p.keyId, (b = new TokenBucket(this.restRate, this.clock)));
    if (b.spend()) return;
    this.metrics.rateLimited.inc({ scope: 'rest' });
    throw errors.rateLimited(this.restRate, b.retryAfterS());
  }

  private refuse(reason: string, err: ServiceError): never {
    this.metrics.rejected.inc({ reason });
    throw err;
  }
}

/**
 * With AUTH=on, every live key loaded before the first request is taken; later changes come by
 * NOTIFY. Listed whatever AUTH says: a key's NOTIFY reloads keys either way, and its stop ends
 * a reload still retrying.
 */
export class ApiKeys implements Component {
  readonly name = 'api keys';

  constructor(
    private readonly auth: Auth,
    private readonly pool: Pick<pg.Pool, 'query'>,
  ) {}

  async start(): Promise<void> {
    if (this.auth.enabled) await this.auth.loadAll(this.pool);
  }

  stop(): void {
    this.auth.stop();
  }
}
