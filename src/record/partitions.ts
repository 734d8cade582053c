import type pg from 'pg';

/** The record's tables, each partitioned by the UTC day of its time column. */
export const RECORD_TABLES = ['record_odds', 'record_states', 'record_ledger', 'record_sent'] as const;
export type RecordTable = (typeof RECORD_TABLES)[number];

export const DAY_MS = 86_400_000;

/** The day an instant falls in, as days since 1970 (UTC). */
export const dayOf = (ms: number): number => Math.floor(ms / DAY_MS);

/** `20261125` for the day. */
const stamp = (day: number): string => new Date(day * DAY_MS).toISOString().slice(0, 10).replaceAll('-', '');

export const partitionName = (table: RecordTable, day: number): string => `${table}_p${stamp(day)}`;

/** The day a partition holds, from its name; undefined for a name not made here. */
export function partitionDay(name: string): number | undefined {
  const m = /_p(\d{4})(\d\d)(\d\d)$/.exec(name);
  return m ? dayOf(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) : undefined;
}

/**
 * The days each table has a partition for, made on demand: a write first makes the partitions
 * of the days its rows fall in. Remembers what it made or found, so a batch of today's rows
 * costs no statement.
 */
export class Partitions {
  private readonly made = new Set<string>();

  async ensure(client: pg.ClientBase, table: RecordTable, days: Iterable<number>): Promise<void> {
    for (const day of days) {
      const name = partitionName(table, day);
      if (this.made.has(name)) continue;
      await client.query(`CREATE TABLE IF NOT EXISTS ${name} PARTITION OF ${table} FOR VALUES FROM (${day * DAY_MS}) TO (${(day + 1) * DAY_MS})`);
      this.made.add(name);
    }
  }

  /**
   * A write failed: the partitions it made went with its transaction's rollback, so none is taken
   * as made any more (the next write asks again, IF NOT EXISTS). Without this, the rows of a day
   * whose first write failed were refused for want of a partition until the process restarted.
   */
  forget(): void {
    this.made.clear();
  }

  /**
   * Drops every partition whose whole day lies more than `keepDays` before `now`'s day: the
   * record keeps today and the `keepDays` days before it. Returns the names dropped.
   */
  async retain(client: pg.ClientBase, keepDays: number, now: number): Promise<string[]> {
    const oldest = dayOf(now) - keepDays;
    const { rows } = await client.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
        WHERE p.relname = ANY($1::text[])`, [RECORD_TABLES]);
    const dropped: string[] = [];
    for (const { name } of rows) {
      const day = partitionDay(name);
      if (day === undefined || day >= oldest) continue;
      // Whole partitions go at once: never a DELETE of rows, which would leave the table to vacuum.
      await client.query(`DROP TABLE IF EXISTS ${name}`);
      this.made.delete(name);
      dropped.push(name);
    }
    return dropped.sort();
  }
}
