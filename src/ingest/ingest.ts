import type pg from 'pg';
import type { OddsImage } from '../odds/messages.js';
import type { ReadModel } from '../refdata/model.js';
import type { MarketType } from '../refdata/types.js';
import type { OddsFeed } from '../feed/odds.js';
import type { FeedMonitor } from '../feed/monitor.js';
import type { Logger } from '../log.js';
import type { OddsMetrics } from '../metrics/odds.js';
import { asDatabaseError } from '../db/pool.js';
import { errors, isDatabaseError } from '../errors.js';
import { writeReference } from './write.js';
import { describe, type ReferenceItem } from './items.js';
import { validateOdds } from './odds.js';
import { checkPrices } from './prices.js';
import { validateReference } from './validate.js';
import type { OutsideFeeds, Sender } from './outside.js';

export interface IngestResult {
  count: number;
  inserted: number;
  updated: number;
}

/** An image whose shape is right, with its market's type where known so far (undefined: ask Postgres). */
interface CheckedOdds {
  where: string;
  image: OddsImage;
  ty: MarketType | null | undefined;
}

export interface IngestDeps {
  pool: pg.Pool;
  model: ReadModel;
  feed: OddsFeed;
  monitor: FeedMonitor;
  maxItems: number;
  metrics: OddsMetrics;
  log: Logger;
  /** Markets other publishers feed: the simulator's odds for them are dropped. */
  outside: OutsideFeeds;
}

/**
 * The one path every publisher goes through: the socket and HTTP ingest
 * routes, the simulator, the demo seed and the import command. A batch is
 * checked whole before anything happens; its reference items commit in one
 * transaction, and only then are its odds images published. Only a batch
 * that was accepted counts as a publisher being heard.
 */
export class Ingest {
  constructor(private readonly deps: IngestDeps) {}

  async accept(data: unknown, from: Sender = 'publisher'): Promise<IngestResult> {
    const t0 = performance.now();
    try {
      const result = await this.acceptChecked(data, from, t0);
      this.deps.metrics.ingestBatches.inc({ outcome: 'ok' });
      this.deps.monitor.heard();
      return result;
    } catch (err) {
      this.deps.metrics.ingestBatches.inc({ outcome: isDatabaseError(err) ? 'unavailable' : 'rejected' });
      throw err;
    }
  }

  private async acceptChecked(data: unknown, from: Sender, t0: number): Promise<IngestResult> {
    const { maxItems, metrics } = this.deps;
    if (!Array.isArray(data)) throw errors.badBody('must be {"data": [item, ...]}');
    if (data.length === 0 || data.length > maxItems) throw errors.badParam('data', `must hold 1 to ${maxItems} items, got ${data.length}`);
    const { reference, odds: checked } = this.check(data);
    await this.checkMarkets(checked);
    const outcomes = reference.length ? await writeReference(this.deps.pool, reference, this.deps.log) : [];
    const odds = this.claimOrYield(checked.map((o) => o.image), from);
    if (odds.length) {
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
   * Runs in the same turn as the images' publishing, after every await: an
   * outside publisher's markets are claimed just before its images are
   * numbered, and a simulator batch that was still in flight (waiting on
   * Postgres) then drops them, so no simulator image is ever numbered after
   * an outside one and overwrites it.
   */
  private claimOrYield(odds: OddsImage[], from: Sender): OddsImage[] {
    const { outside } = this.deps;
    if (from === 'simulator') return odds.filter((o) => !outside.has(o.mid));
    for (const o of odds) outside.claim(o.mid);
    return odds;
  }

  /**
   * Every image against its market's price rule, in batch order. A market the read model does
   * not hold yet is looked up in Postgres: one committed a moment ago (here or on another pod) is
   * known there before its NOTIFY reaches the model. Still unknown: refused. Postgres not
   * answering is said as such, never blamed on the publisher.
   */
  private async checkMarkets(odds: CheckedOdds[]): Promise<void> {
    const unseen = [...new Set(odds.filter((o) => o.ty === undefined).map((o) => o.image.mid))];
    const stored = new Map<string, MarketType | null>();
    if (unseen.length) {
      try {
        const { rows } = await this.deps.pool.query<{ mid: string; ty: MarketType | null }>('SELECT mid, ty FROM markets WHERE mid = ANY($1)', [unseen]);
        for (const r of rows) stored.set(r.mid, r.ty);
      } catch (err) {
        throw asDatabaseError(err);
      }
    }
    for (const { where, image, ty } of odds) {
      const type = ty === undefined ? stored.get(image.mid) : ty;
      if (type === undefined) throw errors.badItem(where, `market ${image.mid} is not known`);
      const bad = checkPrices(image, type);
      if (bad) throw errors.badItem(where, bad);
    }
  }

  /**
   * Every item's shape, and each image's market type where it is known without Postgres: from a
   * market item earlier in the batch (a nested market has none of its own: null), else the read model.
   */
  private check(data: unknown[]): { reference: [number, ReferenceItem][]; odds: CheckedOdds[] } {
    const reference: [number, ReferenceItem][] = [];
    const odds: CheckedOdds[] = [];
    const created = new Map<string, MarketType | null>();
    for (const [i, raw] of data.entries()) {
      const item = (raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
      const where = describe(i, item);
      if (item.kind === 'odds') {
        const checked = validateOdds(item);
        if ('error' in checked) throw errors.badItem(where, checked.error);
        const mid = checked.image.mid;
        odds.push({ where, image: checked.image, ty: created.has(mid) ? created.get(mid) : this.deps.model.typeOf(mid) });
        continue;
      }
      const checked = validateReference(raw);
      if ('error' in checked) throw errors.badItem(where, checked.error);
      const m = checked.item;
      if (m.kind === 'market') {
        if (m.ty !== undefined) created.set(m.mid, m.ty);
        for (const n of m.m ?? []) created.set(n.mid, null);
      }
      reference.push([i, m]);
    }
    return { reference, odds };
  }
}
