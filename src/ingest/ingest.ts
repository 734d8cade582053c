import type pg from 'pg';
import type { OddsImage } from '../odds/messages.js';
import type { ReadModel } from '../refdata/model.js';
import type { ModelSync } from '../refdata/sync.js';
import type { MarketType } from '../refdata/types.js';
import type { OddsRelay } from '../relay/odds-relay.js';
import type { FeedMonitor } from '../relay/feed-monitor.js';
import type { Logger } from '../log.js';
import type { OddsMetrics, SportDelays } from '../metrics/odds.js';
import { asDatabaseError } from '../db/pool.js';
import { errors, isDatabaseError } from '../errors.js';
import { writeReference, type PublisherKey } from './write.js';
import { describe, type ReferenceItem } from './items.js';
import { validateOdds } from './validate-odds.js';
import { checkPrices, pricingOf, type Pricing } from './prices.js';
import { validateReference } from './validate.js';
import type { OutsideFeeds, Sender } from './outside.js';

// HTTP ingest takes the key type from here, with the rest of the ingest API.
export type { PublisherKey };

export interface IngestResult {
  count: number;
  inserted: number;
  updated: number;
}

/** Who sent a batch (the simulator yields outside-fed markets) and with which key, if any. */
interface SentBy {
  from?: Sender;
  key?: PublisherKey;
}

/** An image whose shape is right, with how its market is priced where known so far (undefined: ask Postgres). */
interface CheckedOdds {
  where: string;
  image: OddsImage;
  pricing: Pricing | undefined;
}

interface IngestDeps {
  pool: pg.Pool;
  model: ReadModel;
  /** Shows a batch's committed rows on this pod before its ack (other pods follow by NOTIFY). */
  sync: Pick<ModelSync, 'show'>;
  relay: OddsRelay;
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
 *
 * A batch sent with a key takes effect only while the key is live: it is
 * checked before anything starts, inside the reference transaction (against
 * the key's row, which a revocation must lock: so the batch commits before the
 * revocation or is refused), and again just before the odds are published.
 *
 * A batch is acked only once this pod shows what it committed (its REST
 * answers, and the `market`, `result` and `unsubscribed` frames its sockets
 * were sent), so a publisher reading back on the same pod never sees an
 * older value.
 */
export class Ingest {
  constructor(private readonly deps: IngestDeps) {}

  async accept(data: unknown, { from = 'publisher', key }: SentBy = {}): Promise<IngestResult> {
    const t0 = performance.now();
    const arrived = Date.now();
    try {
      const result = await this.acceptChecked(data, from, key, t0, arrived);
      this.deps.metrics.ingestBatches.inc({ outcome: 'ok' });
      this.deps.monitor.heard();
      return result;
    } catch (err) {
      this.deps.metrics.ingestBatches.inc({ outcome: isDatabaseError(err) ? 'unavailable' : 'rejected' });
      throw err;
    }
  }

  private async acceptChecked(data: unknown, from: Sender, key: PublisherKey | undefined, t0: number, arrived: number): Promise<IngestResult> {
    const { maxItems, metrics } = this.deps;
    if (key && !key.live()) throw errors.keyRevoked();
    if (!Array.isArray(data)) throw errors.badBody('must be {"data": [item, ...]}');
    if (data.length === 0 || data.length > maxItems) throw errors.badParam('data', `must hold 1 to ${maxItems} items, got ${data.length}`);
    const { reference, odds: checked } = this.check(data);
    await this.checkMarkets(checked);
    const written = new Set<string>();
    const outcomes = reference.length ? await writeReference(this.deps.pool, reference, this.deps.log, key, written) : [];
    // Read your writes: the ack comes once this pod's REST and frames show what the batch committed.
    if (written.size) await this.deps.sync.show(written);
    // After the last await and in the same turn as the claim and the publishing: a revoked key neither claims nor publishes.
    if (checked.length && key && !key.live()) throw errors.keyRevoked(outcomes.length ? 'its reference items were written before the revocation; its odds were not published' : undefined);
    const odds = this.claimOrYield(checked.map((o) => o.image), from);
    if (odds.length) {
      const published = this.deps.relay.publish(odds, Date.now());
      if (published) await published;
      metrics.oddsIngested.inc(odds.length);
      metrics.ingestItems.inc({ kind: 'odds' }, odds.length);
      this.observeDelays(odds, arrived, (performance.now() - t0) / 1000);
    }
    for (const [, item] of reference) metrics.ingestItems.inc({ kind: item.kind });
    const inserted = outcomes.filter((o) => o === 'inserted').length;
    return { count: data.length, inserted, updated: outcomes.length - inserted };
  }

  /**
   * Each image's delays from its source's time, to arriving and to being published (a source
   * clock ahead of ours counts as no delay), and the batch's time here once per sport in it. A
   * market the read model does not hold yet (created in this batch) counts as sport `unknown`.
   */
  private observeDelays(odds: OddsImage[], arrived: number, ingestSeconds: number): void {
    const published = Date.now();
    const sports = new Set<SportDelays>();
    for (const o of odds) {
      const d = this.deps.metrics.delays(this.deps.model.sportOf(o.mid) ?? 'unknown');
      d.sourceToIngest.observe(Math.max(0, arrived - o.ts) / 1000);
      d.sourceToPublish.observe(Math.max(0, published - o.ts) / 1000);
      sports.add(d);
    }
    for (const d of sports) d.ingestToPublish.observe(ingestSeconds);
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
    const unseen = [...new Set(odds.filter((o) => o.pricing === undefined).map((o) => o.image.mid))];
    const stored = new Map<string, Pricing>();
    if (unseen.length) {
      try {
        const { rows } = await this.deps.pool.query<{ mid: string; ty: MarketType | null; runners: boolean }>(
          'SELECT m.mid, m.ty, EXISTS (SELECT 1 FROM runners r WHERE r.mid = m.mid) AS runners FROM markets m WHERE m.mid = ANY($1)', [unseen]);
        for (const r of rows) stored.set(r.mid, pricingOf(r.ty, r.runners));
      } catch (err) {
        throw asDatabaseError(err);
      }
    }
    for (const { where, image, pricing } of odds) {
      const how = pricing ?? stored.get(image.mid);
      if (how === undefined) throw errors.badItem(where, `market ${image.mid} is not known`);
      const bad = checkPrices(image, how);
      if (bad) throw errors.badItem(where, bad);
    }
  }

  /**
   * Every item's shape, and how each image's market is priced where that is known without
   * Postgres: from a market item earlier in the batch (a nested market is a runner market), else
   * the read model.
   */
  private check(data: unknown[]): { reference: [number, ReferenceItem][]; odds: CheckedOdds[] } {
    const reference: [number, ReferenceItem][] = [];
    const odds: CheckedOdds[] = [];
    const created = new Map<string, Pricing>();
    for (const [i, raw] of data.entries()) {
      const item = (raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
      const where = describe(i, item);
      if (item.kind === 'odds') {
        const checked = validateOdds(item);
        if ('error' in checked) throw errors.badItem(where, checked.error);
        const mid = checked.image.mid;
        odds.push({ where, image: checked.image, pricing: created.get(mid) ?? this.modelPricing(mid) });
        continue;
      }
      const checked = validateReference(raw);
      if ('error' in checked) throw errors.badItem(where, checked.error);
      const m = checked.item;
      if (m.kind === 'market') {
        // A partial market item changes only what it carries: the rest is as the model holds it.
        const ty = m.ty !== undefined ? m.ty : this.deps.model.typeOf(m.mid);
        const runners = m.r !== undefined ? m.r.length > 0 : (this.deps.model.hasRunners(m.mid) ?? false);
        if (ty !== undefined) created.set(m.mid, pricingOf(ty, runners));
        for (const n of m.m ?? []) created.set(n.mid, 'runner');
      }
      reference.push([i, m]);
    }
    return { reference, odds };
  }

  private modelPricing(mid: string): Pricing | undefined {
    const ty = this.deps.model.typeOf(mid);
    return ty === undefined ? undefined : pricingOf(ty, this.deps.model.hasRunners(mid) ?? false);
  }
}
