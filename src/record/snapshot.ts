import type pg from 'pg';
import { errors } from '../errors.js';
import { systemClock, type Clock } from '../lib/clock.js';
import { holdClient } from '../db/pool.js';

/** Where a reader's statements go: one connection inside one snapshot of the record. */
export type RecordDb = Pick<pg.ClientBase, 'query'>;

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
 */
export class RecordSnapshots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly pool: Pick<pg.Pool, 'connect'>,
    private readonly share: SnapshotShare = { concurrent: Infinity, waitMs: 0 },
    private readonly clock: Clock = systemClock,
  ) {}

  async read<T>(answer: (db: RecordDb) => Promise<T>): Promise<T> {
    await this.turn();
    try {
      return await this.once(answer);
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  private turn(): Promise<void> {
    if (this.running < this.share.concurrent) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const go = () => {
        timer.stop();
        this.running++;
        resolve();
      };
      const timer = this.clock.after(this.share.waitMs, () => {
        this.waiting.splice(this.waiting.indexOf(go), 1);
        reject(errors.recordBusy(this.running, this.share.waitMs));
      });
      this.waiting.push(go);
    });
  }

  private async once<T>(answer: (db: RecordDb) => Promise<T>): Promise<T> {
    const held = holdClient(await this.pool.connect());
    try {
      const out = await held.run(async (c) => {
        await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        const answered = await answer(c);
        await c.query('COMMIT');
        return answered;
      });
      held.release();
      return out;
    } catch (err) {
      // The connection may be mid-transaction or lost (a frozen Postgres, a timeout): it is not reused.
      held.release(err as Error);
      throw err;
    }
  }
}
