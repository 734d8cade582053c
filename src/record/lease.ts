import pg from 'pg';

/** The advisory lock the recording pod holds: one per database, so one recorder per record. */
const LEASE_KEY = 7_406_140;

/** Whoever holds it is the cluster's one recorder (recorder.ts). */
export interface RecordLease {
  readonly held: boolean;
  /** Tries once: true when this pod now holds the lease. `lost` is called once if it is lost later. */
  acquire(lost: () => void): Promise<boolean>;
  /** Gives the lease up (the pod stops). */
  release(): void;
}

/**
 * The recorder's lease: a session-level advisory lock on the record's Postgres, held on an idle
 * connection of its own. Whoever holds it is the one recorder of the cluster; it is released
 * when that connection ends for any reason (the pod stopped or died, the network or Postgres
 * went away), and another pod's next try takes it. An idle connection is left alone by a
 * Postgres that is merely slow or frozen, so the recorder keeps its lease through a stall.
 */
export class Lease implements RecordLease {
  private client: pg.Client | undefined;
  private lostHandler: (() => void) | undefined;

  constructor(private readonly url: string, private readonly connectTimeoutMs: number) {}

  get held(): boolean {
    return this.client !== undefined;
  }

  /** Tries once: true when this pod now holds the lease. `lost` is called once if it is lost later. */
  async acquire(lost: () => void): Promise<boolean> {
    if (this.client) return true;
    const c = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: this.connectTimeoutMs, application_name: 'odds-recorder-lease', keepAlive: true });
    c.on('error', () => this.release(c));
    c.on('end', () => this.release(c));
    try {
      await c.connect();
      const { rows } = await c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [LEASE_KEY]);
      if (!rows[0].ok) {
        void c.end().catch(() => undefined);
        return false;
      }
    } catch (err) {
      void c.end().catch(() => undefined);
      throw err;
    }
    this.client = c;
    this.lostHandler = lost;
    return true;
  }

  /** Gives the lease up (the pod stops): the connection ends, and with it the lock. */
  release(c = this.client): void {
    if (!c || c !== this.client) {
      void c?.end().catch(() => undefined);
      return;
    }
    this.client = undefined;
    const lost = this.lostHandler;
    this.lostHandler = undefined;
    void c.end().catch(() => undefined);
    lost?.();
  }
}
