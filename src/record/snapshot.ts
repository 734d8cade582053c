import type pg from 'pg';

/** Where a reader's statements go: one connection inside one snapshot of the record. */
export type RecordDb = Pick<pg.ClientBase, 'query'>;

/**
 * Every answer of the record is read from one moment of it. The recorder commits a batch's images
 * and state frames together, but two statements on two connections (or one after the other under
 * READ COMMITTED) can straddle that commit: a range read so showed a market's settlement without
 * the images published before it. A REPEATABLE READ transaction makes every statement of an answer
 * see the same committed rows; read only, it takes no lock a write waits for.
 */
export class RecordSnapshots {
  constructor(private readonly pool: Pick<pg.Pool, 'connect'>) {}

  async read<T>(answer: (db: RecordDb) => Promise<T>): Promise<T> {
    const c = await this.pool.connect();
    try {
      await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const out = await answer(c);
      await c.query('COMMIT');
      c.release();
      return out;
    } catch (err) {
      // The connection may be mid-transaction or lost (a frozen Postgres, a timeout): it is not reused.
      c.release(err as Error);
      throw err;
    }
  }
}
