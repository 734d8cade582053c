import type pg from 'pg';
import type { ItemRefusal } from '../odds/messages.js';
import type { ReadModel } from '../refdata/model.js';
import type { ModelSync } from '../refdata/sync.js';
import type { OddsRelay } from '../relay/odds-relay.js';
import type { FeedMonitor } from '../relay/feed-monitor.js';
import type { Feeder, Freshness } from '../relay/freshness.js';
import type { Logger } from '../log.js';
import type { OddsMetrics, SportDelays } from '../metrics/odds.js';
import { errors, isDatabaseError, type ServiceError } from '../errors.js';
import { isMarketId } from '../refdata/ids.js';
import { writeReference, type PublisherKey } from './write.js';
import type { WriteOutcome } from './apply.js';
import { describe } from './items.js';
import { validateReference } from './validate.js';
import { validateOddsItem, validateStale, validateSuspend } from './validate-odds.js';
import { OddsJudge, type AcceptedImage, type JudgedOdds } from './odds-items.js';
import { SourceTime, type SourceTimeLimits } from './source-time.js';
import type { OutsideFeeds, Sender } from './outside.js';
import type { BatchItems, ReadItems, RefusedItems } from './batch.js';

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
  /** How odds images' source times are judged (source-time.ts). */
  sourceTime: SourceTimeLimits;
  /** How long a reference write waits for rows another batch holds (PG_LOCK_WAIT_MS). */
  lockWaitMs?: number;
  metrics: OddsMetrics;
  log: Logger;
  /** Markets other publishers feed: the simulator's odds for them are dropped. */
  outside: OutsideFeeds;
}

/**
 * The one path every publisher goes through: the socket and HTTP ingest
 * routes, the simulator, the demo seed and the import command. A batch is
 * read where it arrives (`read`): its reference items are checked whole
 * before anything happens and commit in one transaction (one bad item refuses
 * the batch); its odds and stale items are read as candidates and, when the
 * batch runs (`accept`), judged one by one against their markets
 * (odds-items.ts), and only once the reference items committed are the
 * accepted images published. An empty batch is a heartbeat.
 * Only a batch that was accepted counts as a publisher being heard, for its markets' freshness
 * and for the feed status: a refused one makes the markets its odds items named `unreliable`.
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
  private readonly judge: OddsJudge;

  constructor(private readonly deps: IngestDeps) {
    this.judge = new OddsJudge(deps.pool, deps.model, new SourceTime(deps.sourceTime), deps.relay, deps.maxItems);
  }

  /**
   * A batch's items read where it arrives (the `/ingest` socket, the REST body, the simulator),
   * before it waits in any queue: reference items typed with the domain's names, odds and stale
   * items as `OddsCandidate`s. What refuses the whole batch (not a list, too many items, the first
   * bad reference item) is kept, and told when the batch runs, after its key is checked.
   */
  read(data: unknown): BatchItems {
    const { maxItems } = this.deps;
    if (!Array.isArray(data)) return { refusal: errors.badBody('must be {"data": [item, ...]}') };
    if (data.length > maxItems) return { refusal: errors.badParam('data', `must hold at most ${maxItems} items, got ${data.length}`) };
    const items: ReadItems = { count: data.length, reference: [], odds: [] };
    for (const [i, raw] of data.entries()) {
      const item = (raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
      const where = describe(i, item);
      if (item.kind === 'odds' || item.kind === 'stale' || item.kind === 'suspend') {
        const mid = isMarketId(item.mid) ? item.mid : undefined;
        items.odds.push({ i, where, mid, read: item.kind === 'odds' ? validateOddsItem(item) : item.kind === 'stale' ? validateStale(item) : validateSuspend(item) });
        continue;
      }
      const checked = validateReference(raw);
      if ('error' in checked) return refuseRead(errors.badItem(where, checked.error), items, data);
      items.reference.push([i, checked.item]);
    }
    return items;
  }

  /** Runs a batch as `read` left it, sent by `from` with `key`, fed by `feeder`: resolves with what its ack reports. */
  async accept(items: BatchItems, { from = 'publisher', key, feeder }: SentBy = {}): Promise<IngestResult> {
    const t0 = performance.now();
    const arrived = Date.now();
    const { metrics, outside } = this.deps;
    try {
      if (key && !key.live()) throw errors.keyRevoked();
      if ('refusal' in items) throw items.refusal;
      const judged = await this.judge.judge(items, feeder);
      const written = new Set<string>();
      const outcomes = items.reference.length ? await writeReference(items.reference, { pool: this.deps.pool, log: this.deps.log, key, keys: written, lockWaitMs: this.deps.lockWaitMs }) : [];
      // Read your writes: the ack comes once this pod's REST and frames show what the batch committed.
      if (written.size) await this.deps.sync.show(written);
      // After the last await and in the same turn as the claim and the publishing: a revoked key neither claims nor publishes.
      if (items.odds.length && key && !key.live()) throw errors.keyRevoked(outcomes.length ? 'its reference items were written before the revocation; its odds were not published' : undefined);
      // An outside publisher's markets are claimed just before its images are numbered, and a
      // simulator batch that was still in flight (waiting on Postgres) then drops them, so no
      // simulator image is ever numbered after an outside one and overwrites it.
      let odds = judged.images;
      if (from === 'simulator') odds = odds.filter((o) => !outside.has(o.image.marketId));
      else for (const o of odds) outside.claim(o.image.marketId);
      // What subscribers hold of each market once the batch is out: its last image in the batch.
      const last = new Map<string, AcceptedImage>();
      for (const o of odds) last.set(o.image.marketId, o);
      // A market whose last image is late is told stale before that image goes out, so no socket takes it for live.
      for (const o of last.values()) if (o.late) this.deps.freshness.fed(feeder, o.image.marketId, true, o.image.sourceTime);
      const published = odds.length ? this.deps.relay.publish(odds.map((o) => o.image), Date.now()) : undefined;
      // Each image is in the book (and queued for sockets) here before the notice that it is live.
      if (published) await published;
      this.freshen(feeder, odds.filter((o) => last.get(o.image.marketId) === o), judged);
      const result = this.tally(items, odds, judged, outcomes, arrived, t0);
      metrics.ingestBatches.inc({ outcome: 'ok' });
      this.deps.monitor.heard();
      feeder?.heard();
      return result;
    } catch (err) {
      metrics.ingestBatches.inc({ outcome: isDatabaseError(err) ? 'unavailable' : 'rejected' });
      this.unreliable(feeder, items);
      throw err;
    }
  }

  /**
   * A batch refused whole: the known markets its readable odds and stale items named are
   * `unreliable` until their next accepted image, since none of its prices was published.
   */
  private unreliable(feeder: Feeder | undefined, items: BatchItems): void {
    const mids = 'refusal' in items ? items.mids ?? [] : items.odds.flatMap((c) => (c.mid === undefined ? [] : [c.mid]));
    for (const mid of new Set(mids)) if (this.deps.model.typeOf(mid) !== undefined) this.deps.freshness.refused(feeder, mid);
  }

  /** The batch's items in the metrics, and its ack's counts. */
  private tally(items: ReadItems, odds: readonly AcceptedImage[], judged: JudgedOdds, outcomes: readonly WriteOutcome[], arrived: number, t0: number): IngestResult {
    const { metrics } = this.deps;
    if (odds.length) {
      metrics.oddsIngested.inc(odds.length);
      metrics.ingestItems.inc({ kind: 'odds' }, odds.length);
      this.observeDelays(odds, arrived, (performance.now() - t0) / 1000);
    }
    for (const [, item] of items.reference) metrics.ingestItems.inc({ kind: item.kind });
    if (judged.stale.length) metrics.ingestItems.inc({ kind: 'stale' }, judged.stale.length);
    const inserted = outcomes.filter((o) => o === 'inserted').length;
    const refused = judged.refused.map(({ i, mid, message }) => ({ i, mid, message }));
    return { count: items.count - refused.length, inserted, updated: outcomes.length - inserted, refused };
  }

  /**
   * What the batch did to its markets' freshness, item by item in batch order, once its images are
   * in the book (so each image goes out before the frame that says it is live): an image (its
   * market's last in the batch) makes its market fresh unless `late`, a stale item marks it, a
   * refused item of a known market makes it unreliable; each names `feeder` as the market's publisher.
   */
  private freshen(feeder: Feeder | undefined, odds: readonly AcceptedImage[], judged: JudgedOdds): void {
    const { freshness } = this.deps;
    const steps: [number, () => void][] = [
      ...odds.map((o): [number, () => void] => [o.i, () => freshness.fed(feeder, o.image.marketId, o.late, o.image.sourceTime)]),
      ...judged.stale.map((m): [number, () => void] => [m.i, () => freshness.marked(feeder, m.mid, m.why)]),
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
    for (const { image } of odds) {
      const d = this.deps.metrics.delays(this.deps.model.sportOf(image.marketId) ?? 'unknown');
      d.sourceToIngest.observe(Math.max(0, arrived - image.sourceTime) / 1000);
      d.sourceToPublish.observe(Math.max(0, published - image.sourceTime) / 1000);
      sports.add(d);
    }
    for (const d of sports) d.ingestToPublish.observe(ingestSeconds);
  }
}

/**
 * A batch refused whole while it was read: the markets of its odds and stale items, those read
 * so far and those after the bad item (only their IDs are read), go with the refusal.
 */
export function refuseRead(refusal: ServiceError, read: ReadItems | undefined, data: readonly unknown[]): RefusedItems {
  const mids = new Set<string>();
  for (const c of read?.odds ?? []) if (c.mid !== undefined) mids.add(c.mid);
  for (const raw of data.slice(read ? read.odds.length + read.reference.length : 0)) {
    const item = raw as { kind?: unknown; mid?: unknown } | null;
    if ((item?.kind === 'odds' || item?.kind === 'stale') && isMarketId(item.mid)) mids.add(item.mid);
  }
  return { refusal, mids: [...mids] };
}
