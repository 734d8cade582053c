import type pg from 'pg';
import type { OddsImage } from '../odds/messages.js';
import type { ReadModel } from '../refdata/model.js';
import type { OddsFeed } from '../feed/odds.js';
import type { FeedMonitor } from '../feed/monitor.js';
import type { Logger } from '../log.js';
import type { OddsMetrics } from '../metrics/odds.js';
import { asDatabaseError } from '../db/pool.js';
import { errors, isDatabaseError } from '../errors.js';
import { writeReference } from './write.js';
import { describe, type ReferenceItem } from './items.js';
import { validateOdds } from './odds.js';
import { validateReference } from './validate.js';

export interface IngestResult {
  count: number;
  inserted: number;
  updated: number;
}

/**
 * The publisher's API key, when keys are in force (the simulator, the demo
 * seed and the import command have none).
 */
export interface PublisherKey {
  readonly id: string;
  /** False once this pod has learned that the key was revoked. */
  live(): boolean;
  /** Postgres showed the key revoked inside a batch's transaction: this pod learns it now, not at the NOTIFY. */
  revoked(): void;
}

export interface IngestDeps {
  pool: pg.Pool;
  model: ReadModel;
  feed: OddsFeed;
  monitor: FeedMonitor;
  maxItems: number;
  metrics: OddsMetrics;
  log: Logger;
}

/**
 * The one path every publisher goes through: the socket and HTTP ingest
 * routes, the simulator, the demo seed and the import command. A batch is
 * checked whole before anything happens; its reference items commit in one
 * transaction, and only then are its odds images published. Only a batch
 * that was accepted counts as a publisher being heard.
 *
 * A batch sent with a key takes effect only while the key is live: it is
 * checked before anything starts, inside the reference transaction (against
 * the key's row, which a revocation must lock: so the batch commits before the
 * revocation or is refused), and again just before the odds are published.
 */
export class Ingest {
  constructor(private readonly deps: IngestDeps) {}

  async accept(data: unknown, key?: PublisherKey): Promise<IngestResult> {
    const t0 = performance.now();
    try {
      const result = await this.acceptChecked(data, t0, key);
      this.deps.metrics.ingestBatches.inc({ outcome: 'ok' });
      this.deps.monitor.heard();
      return result;
    } catch (err) {
      this.deps.metrics.ingestBatches.inc({ outcome: isDatabaseError(err) ? 'unavailable' : 'rejected' });
      throw err;
    }
  }

  private async acceptChecked(data: unknown, t0: number, key: PublisherKey | undefined): Promise<IngestResult> {
    const { maxItems, metrics } = this.deps;
    if (key && !key.live()) throw errors.keyRevoked();
    if (!Array.isArray(data)) throw errors.badBody('must be {"data": [item, ...]}');
    if (data.length === 0 || data.length > maxItems) throw errors.badParam('data', `must hold 1 to ${maxItems} items, got ${data.length}`);
    const { reference, odds, unseen } = this.check(data);
    if (unseen.size) await this.confirmMarkets(unseen);
    const outcomes = reference.length ? await writeReference(this.deps.pool, reference, this.deps.log, key) : [];
    if (odds.length) {
      if (key && !key.live()) throw errors.keyRevoked(outcomes.length ? 'its reference items were written before the revocation; its odds were not published' : undefined);
      const published = this.deps.feed.publish(odds, Date.now());
      if (published) await published;
      metrics.oddsIngested.inc(odds.length);
      metrics.ingestItems.inc({ kind: 'odds' }, odds.length);
      metrics.ingestToPublish.observe((performance.now() - t0) / 1000);
    }
    for (const [, item] of reference) metrics.ingestItems.inc({ kind: item.kind });
    const inserted = outcomes.filter((o) => o === 'inserted').length;
    return { count: data.length, inserted, updated: outcomes.length - inserted };
  }

  /**
   * Odds for markets the read model does not hold yet are checked against
   * Postgres: a market committed a moment ago (here or on another pod) is
   * known there before its NOTIFY reaches the model. Still unknown: refused.
   * Postgres not answering is said as such, never blamed on the publisher.
   */
  private async confirmMarkets(unseen: Map<string, string>): Promise<void> {
    let rows: { mid: string }[];
    try {
      ({ rows } = await this.deps.pool.query<{ mid: string }>('SELECT mid FROM markets WHERE mid = ANY($1)', [[...unseen.keys()]]));
    } catch (err) {
      throw asDatabaseError(err);
    }
    const found = new Set(rows.map((r) => r.mid));
    for (const [mid, where] of unseen) if (!found.has(mid)) throw errors.badItem(where, `market ${mid} is not known`);
  }

  private check(data: unknown[]): { reference: [number, ReferenceItem][]; odds: OddsImage[]; unseen: Map<string, string> } {
    const reference: [number, ReferenceItem][] = [];
    const odds: OddsImage[] = [];
    const created = new Set<string>();
    const unseen = new Map<string, string>();
    for (const [i, raw] of data.entries()) {
      const item = (raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
      const where = describe(i, item);
      if (item.kind === 'odds') {
        const checked = validateOdds(item);
        if ('error' in checked) throw errors.badItem(where, checked.error);
        const mid = checked.image.mid;
        if (!this.deps.model.knows(mid) && !created.has(mid) && !unseen.has(mid)) unseen.set(mid, where);
        odds.push(checked.image);
        continue;
      }
      const checked = validateReference(raw);
      if ('error' in checked) throw errors.badItem(where, checked.error);
      if (checked.item.kind === 'market') {
        created.add(checked.item.mid);
        for (const n of checked.item.m ?? []) created.add(n.mid);
      }
      reference.push([i, checked.item]);
    }
    return { reference, odds, unseen };
  }
}
