import type pg from 'pg';
import { inTransaction } from '../db/pool.js';
import { applyItem } from '../ingest/apply.js';
import { validateReference } from '../ingest/validate.js';
import type { Logger } from '../log.js';
import type { Component } from '../lib/component.js';
import { demoItems } from './data.js';

/**
 * Seeds an empty database with the demo set, through the same validation and
 * write path as ingest, so the demo can never hold data ingest would refuse.
 * A database that already has sports is left alone.
 */
export async function loadDemoIfEmpty(pool: pg.Pool, log: Logger): Promise<boolean> {
  const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM sports');
  if (rows[0].n > 0) return false;
  const items = demoItems(new Date());
  await inTransaction(pool, async (client) => {
    // Two pods starting on one empty database must not both seed it.
    await client.query('LOCK TABLE sports IN EXCLUSIVE MODE');
    if ((await client.query('SELECT 1 FROM sports LIMIT 1')).rowCount) return;
    for (const [i, raw] of items.entries()) {
      const checked = validateReference(raw);
      if ('error' in checked) throw new Error(`demo item ${i}: ${checked.error}`);
      await applyItem(client, checked.item);
    }
  });
  log.info('demo data loaded', { items: items.length });
  return true;
}

/** The demo set seeded into an empty database (DEMO_DATA), after the migrations and before the read model loads. */
export class DemoSeed implements Component {
  readonly name = 'demo seed';

  constructor(
    private readonly pool: pg.Pool,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    await loadDemoIfEmpty(this.pool, this.log);
  }

  stop(): void {}
}
