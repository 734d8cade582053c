import { CLOSE, errors, type ServiceError } from '../errors.js';
import type { AuthMetrics } from '../metrics/auth.js';

export interface Closable {
  end(code?: number, reason?: string): void;
}

/**
 * Every open socket, subscriber or publisher, by the key it came in with: for
 * the per-key and total limits checked at the handshake, and to close a
 * revoked key's sockets at once.
 */
export class SocketRegistry {
  private byKey = new Map<string, Set<Closable>>();
  private total = 0;

  constructor(
    private readonly perKey: number,
    private readonly max: number,
    /** Per-key counting only means something when keys exist. */
    private readonly countPerKey: boolean,
    private readonly metrics: AuthMetrics,
  ) {}

  /** Why a new socket for this key may not open, or undefined when it may. */
  refuse(keyId: string): ServiceError | undefined {
    if (this.total >= this.max) {
      this.metrics.socketsRefused.inc({ reason: 'total' });
      return errors.serverFull(this.max);
    }
    if (this.countPerKey && (this.byKey.get(keyId)?.size ?? 0) >= this.perKey) {
      this.metrics.socketsRefused.inc({ reason: 'per_key' });
      return errors.tooManySockets(this.perKey);
    }
    return undefined;
  }

  add(keyId: string, socket: Closable): void {
    let set = this.byKey.get(keyId);
    if (!set) this.byKey.set(keyId, (set = new Set()));
    set.add(socket);
    this.total++;
  }

  remove(keyId: string, socket: Closable): void {
    const set = this.byKey.get(keyId);
    if (!set?.delete(socket)) return;
    this.total--;
    if (set.size === 0) this.byKey.delete(keyId);
  }

  closeKey(keyId: string): void {
    for (const s of [...(this.byKey.get(keyId) ?? [])]) {
      this.metrics.revokedCloses.inc();
      s.end(CLOSE.REVOKED, 'API key revoked');
    }
  }
}
