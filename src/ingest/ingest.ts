import type pg from 'pg';
import type { ItemRefusal } from '../odds/messages.js';
import type { ReadModel } from '../refdata/model.js';
import type { ModelSync } from '../refdata/sync.js';
import type { OddsRelay } from '../relay/odds-relay.js';
import type { FeedMonitor } from '../relay/feed-monitor.js';
import type { Feeder, Freshness } from '../relay/freshness.js';
import type { Logger } from '../log.js';
import type { OddsMetrics, SportDelays } from '../metrics/odds.js';
import { errors, isDatabaseError } from '../errors.js';
import { writeReference, type PublisherKey } from './write.js';
import { describe, type ReferenceItem } from './items.js';
import { pricingOf, type Pricing } from './prices.js';
import { validateReference } from './validate.js';
import { isMarketId } from '../refdata/ids.js';
import { OddsItems, type AcceptedImage, type JudgedOdds } from './odds-items.js';
import type { OutsideFeeds, Sender } from './outside.js';
import type { Batch, BatchRunner } from './lane.js';

// HTTP ingest takes the key type from here, with the rest of the ingest API.
export type { PublisherKey };

export interface IngestResult {
  /** Items applied: the batch's items less those refused. */
  count: number;
  inserted: number;
  updated: number;
  /** Odds and stale items refused one by one. */
  refused: ItemRefusal[];
}

/** Who sent a batch (the simulator yields outside-fed markets), with which key, if any, and as which publisher for freshness. */
export interface SentBy {
  from?: Sender;
  key?: PublisherKey;
  /** The connection, REST key or simulator: it feeds the markets of its odds and stale items. */
  feeder?: Feeder;
}

interface IngestDeps {
  pool: pg.Pool;
  model: ReadModel;
  /** Shows a batch's committed rows on this pod before its ack (other pods follow by NOTIFY). */
  sync: Pick<ModelSync, 'show'>;
  relay: OddsRelay;
  monitor: FeedMonitor;
  /** Markets' freshness: told what each odds and stale item did. */
  freshness: Freshness;
  maxItems: number;
  metrics: OddsMetrics;
  log: Logger;
  /** Markets other publishers feed: the simulator's odds for them are dropped. */
  outside: OutsideFeeds;
}

/**
 * The one path every publisher goes through: the socket and HTTP ingest
 * routes, the simulator, the demo seed and the import command. A batch's
 * reference items are checked whole before anything happens and commit in one
 * transaction (one bad item refuses the batch); its odds and stale items are
 * judged one by one (odds-items.ts), and only once the reference items
 * committed are the accepted images published. An empty batch is a heartbeat.
 * Only a batch that was accepted counts as a publisher being heard.
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

  async accept(data: unknown, { from = 'publisher', key, feeder }: SentBy = {}): Promise<IngestResult> {
    const t0 = performance.now();
    const arrived = Date.now();
    try {
      const result = await this.acceptChecked(data, from, key, feeder, t0, arrived);
      this.deps.metrics.ingestBatches.inc({ outcome: 'ok' });
      this.deps.monitor.heard();
      return result;
    } catch (err) {
      this.deps.metrics.ingestBatches.inc({ outcome: isDatabaseError(err) ? 'unavailable' : 'rejected' });
      throw err;
    }
  }

  private async acceptChecked(data: unknown, from: Sender, key: PublisherKey | undefined, feeder: Feeder | undefined, t0: number, arrived: number): Promise<IngestResult> {
    const { maxItems, metrics } = this.deps;
    if (key && !key.live()) throw errors.keyRevoked();
    if (!Array.isArray(data)) throw errors.badBody('must be {"data": [item, ...]}');
    if (data.length > maxItems) throw errors.badParam('data', `must hold at most ${maxItems} items, got ${data.length}`);
    const { reference, odds: items } = this.check(data);
    const judged = await items.judge();
    const written = new Set<string>();
    const outcomes = reference.length ? await writeReference(this.deps.pool, reference, this.deps.log, key, written) : [];
    // Read your writes: the ack comes once this pod's REST and frames show what the batch committed.
    if (written.size) await this.deps.sync.show(written);
    // After the last await and in the same turn as the claim and the publishing: a revoked key neither claims nor publishes.
    if (items.size && key && !key.live()) throw errors.keyRevoked(outcomes.length ? 'its reference items were written before the revocation; its odds were not published' : undefined);
    const odds = this.claimOrYield(judged.images, from);
    const published = odds.length ? this.deps.relay.publish(odds.map((o) => o.image), Date.now()) : undefined;
    this.freshen(feeder, odds, judged);
    if (odds.length) {
      if (published) await published;
      metrics.oddsIngested.inc(odds.length);
      metrics.ingestItems.inc({ kind: 'odds' }, odds.length);
      this.observeDelays(odds, arrived, (performance.now() - t0) / 1000);
    }
    for (const [, item] of reference) metrics.ingestItems.inc({ kind: item.kind });
    if (judged.marks.length) metrics.ingestItems.inc({ kind: 'stale' }, judged.marks.length);
    const inserted = outcomes.filter((o) => o === 'inserted').length;
    const refused = judged.refused.map(({ i, mid, message }) => ({ i, mid, message }));
    return { count: data.length - refused.length, inserted, updated: outcomes.length - inserted, refused };
  }

  /**
   * What the batch did to its markets' freshness, item by item in batch order, in the turn its
   * images were handed to the bus (so with one process each image goes out before the frame that
   * says it is live): an image makes its market fresh unless `late`, a stale item marks it, a
   * refused item of a known market makes it unreliable; each names `feeder` as the market's publisher.
   */
  private freshen(feeder: Feeder | undefined, odds: readonly AcceptedImage[], judged: JudgedOdds): void {
    const { freshness } = this.deps;
    const steps: [number, () => void][] = [
      ...odds.map((o): [number, () => void] => [o.i, () => freshness.fed(feeder, o.image.mid, o.late)]),
      ...judged.marks.map((m): [number, () => void] => [m.i, () => freshness.marked(feeder, m.mid, m.why)]),
      ...judged.refused.filter((r) => r.known).map((r): [number, () => void] => [r.i, () => freshness.refused(feeder, r.mid)]),
    ];
    for (const [, step] of steps.sort((a, b) => a[0] - b[0])) step();
  }

  /**
   * Each image's delays from its source's time, to arriving and to being published (a source
   * clock ahead of ours counts as no delay), and the batch's time here once per sport in it. A
   * market the read model does not hold yet (created in this batch) counts as sport `unknown`.
   */
  private observeDelays(odds: readonly AcceptedImage[], arrived: number, ingestSeconds: number): void {
    const published = Date.now();
    const sports = new Set<SportDelays>();
    for (const { image: o } of odds) {
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
  private claimOrYield(odds: AcceptedImage[], from: Sender): AcceptedImage[] {
    const { outside } = this.deps;
    if (from === 'simulator') return odds.filter((o) => !outside.has(o.image.mid));
    for (const o of odds) outside.claim(o.image.mid);
    return odds;
  }

  /**
   * Every reference item's shape (the first bad one refuses the batch), and the odds and stale
   * items to judge one by one, with how each market is priced where that is known without
   * Postgres: from a market item earlier in the batch (a nested market is a runner market), else
   * the read model.
   */
  private check(data: unknown[]): { reference: [number, ReferenceItem][]; odds: OddsItems } {
    const reference: [number, ReferenceItem][] = [];
    const odds = new OddsItems(this.deps.pool);
    const created = new Map<string, Pricing>();
    const pricing = (mid: string) => created.get(mid) ?? this.modelPricing(mid);
    for (const [i, raw] of data.entries()) {
      const item = (raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
      const where = describe(i, item);
      if (item.kind === 'odds' || item.kind === 'stale') {
        odds.add(i, where, item, isMarketId(item.mid) ? pricing(item.mid) : undefined);
        continue;
      }
      const checked = validateReference(raw);
      if ('error' in checked) throw errors.badItem(where, checked.error);
      const m = checked.item;
      if (m.kind === 'market') {
        // A partial market item changes only what it carries: the rest is as the model holds it.
        const type = m.type !== undefined ? m.type : this.deps.model.typeOf(m.id);
        const runners = m.runners !== undefined ? m.runners.length > 0 : (this.deps.model.hasRunners(m.id) ?? false);
        if (type !== undefined) created.set(m.id, pricingOf(type, runners));
        for (const n of m.nested ?? []) created.set(n.id, 'runner');
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

/** One publisher connection's batches into ingest, as its lane runs them: who sends them is the connection's. */
export class PublisherBatches implements BatchRunner<Batch> {
  constructor(private readonly ingest: Ingest, private readonly by: SentBy) {}

  run(batch: Batch): Promise<IngestResult> {
    return this.ingest.accept(batch.data, this.by);
  }
}
