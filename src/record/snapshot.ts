import type pg from 'pg';
import { errors } from '../errors.js';
import { systemClock, type Clock } from '../lib/clock.js';
import { holdClient } from '../db/pool.js';

/** Where a reader's statements go: one connection inside one snapshot of the record. */
export type RecordDb = Pick<pg.ClientBase, 'query'>;

/** The pool the reads take their connections from (a pg.Pool). */
export interface SnapshotPool {
  connect(): Promise<pg.PoolClient>;
  /** On another connection: how a read whose caller left has its statement cancelled. */
  query(sql: string, values: unknown[]): Promise<unknown>;
}

/** How many reads hold a connection at once, and how long one more waits for a turn before it is refused (BUSY). */
export interface SnapshotShare {
  concurrent: number;
  waitMs: number;
}

/**
 * Every answer of the record is read from one moment of it. The recorder commits a batch's images
 * and state frames together, but two statements on two connections (or one after the other under
 * READ COMMITTED) can straddle that commit: a range read so showed a market's settlement without
 * the images published before it. A REPEATABLE READ transaction makes every statement of an answer
 * see the same committed rows; read only, it takes no lock a write waits for.
 *
 * An answer holds its connection for all its statements (a socket's screen is several a market),
 * so the reads take at most `share.concurrent` of the pool at once: in the service's own pool,
 * slow record reads would otherwise hold every connection, and a subscribe or a key check wait
 * for one until it failed (test/record/snapshot-share.test.ts).
 *
 * A read whose caller leaves (`signal`: the client hung up) stops: waiting for its turn, it leaves
 * the queue; reading, its statement under way is cancelled in Postgres (`pg_cancel_backend`, on
 * another of the pool's connections, so the pool keeps one beyond the share) and it issues no
 * other; its connection, which that cancel may reach late, is never reused. It keeps its turn
 * until its statement has ended, so callers that hang up at once cannot have more statements
 * running than the share allows.
 */
export class RecordSnapshots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly pool: SnapshotPool,
    private readonly share: SnapshotShare = { concurrent: Infinity, waitMs: 0 },
    private readonly clock: Clock = systemClock,
  ) {}

  async read<T>(answer: (db: RecordDb) => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.turn(signal);
    try {
      return await this.once(answer, signal);
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  private turn(signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(errors.aborted());
    if (this.running < this.share.concurrent) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const done = () => {
        timer.stop();
        signal?.removeEventListener('abort', left);
        // Gone already when its turn came (the queue hands turns out by shift).
        const queued = this.waiting.indexOf(go);
        if (queued >= 0) this.waiting.splice(queued, 1);
      };
      const go = () => {
        done();
        this.running++;
        resolve();
      };
      const left = () => {
        done();
        reject(errors.aborted());
      };
      const timer = this.clock.after(this.share.waitMs, () => {
        done();
        reject(errors.recordBusy(this.running, this.share.waitMs));
      });
      signal?.addEventListener('abort', left, { once: true });
      this.waiting.push(go);
    });
  }

  private async once<T>(answer: (db: RecordDb) => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    const client = await this.pool.connect();
    if (signal?.aborted) {
      // Its caller left while it waited for a connection: nothing was asked on it, so it goes back clean.
      client.release();
      throw errors.aborted();
    }
    const held = holdClient(client);
    // pg's own field (the backend's pid, from the connection's start), not in its types.
    const pid = (client as unknown as { processID: number }).processID;
    const cancel = () => void this.pool.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => undefined);
    signal?.addEventListener('abort', cancel, { once: true });
    try {
      const out = await held.run(async (c) => {
        const db = signal ? stopping(c, signal) : c;
        await db.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        const answered = await answer(db);
        await db.query('COMMIT');
        // Its caller left while the COMMIT was under way: the cancel sent for this backend may land
        // yet, and on a connection given back it would end another read's statement.
        if (signal?.aborted) throw errors.aborted();
        return answered;
      });
      held.release();
      return out;
    } catch (err) {
      // The connection may be mid-transaction, lost (a frozen Postgres, a timeout) or its statement cancelled: it is not reused.
      held.release(err as Error);
      throw signal?.aborted ? errors.aborted() : err;
    } finally {
      signal?.removeEventListener('abort', cancel);
    }
  }
}

/** The connection, refusing every statement once `signal` has aborted: a read whose caller left asks nothing more. */
function stopping(c: RecordDb, signal: AbortSignal): RecordDb {
  const query = (...args: unknown[]): Promise<unknown> => (signal.aborted ? Promise.reject(errors.aborted()) : (c.query as (...a: unknown[]) => Promise<unknown>)(...args));
  return { query: query as RecordDb['query'] };
}
