import type pg from 'pg';
import type { Book } from '../odds/book.js';
import type { Broadcaster } from '../odds/broadcaster.js';
import type { Bus } from '../bus/types.js';
import type { OddsImage } from '../odds/messages.js';
import type { ReadModel } from '../refdata/model.js';
import type { Logger } from '../log.js';
import type { OddsMetrics } from '../metrics/odds.js';
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
 * The one path every publisher goes through: the socket and HTTP ingest
 * routes, the simulator, the demo seed and the import command. A batch is
 * checked whole before anything happens; its reference items commit in one
 * transaction, and only then are its odds images published.
 */
export class Ingest {
  /** When a publisher last sent anything, for the feed staleness check. */
  lastAt = Date.now();

  constructor(
    private readonly pool: pg.Pool,
    private readonly model: ReadModel,
    private readonly book: Book,
    private readonly broadcaster: Broadcaster,
    private readonly bus: Bus,
    private readonly maxItems: number,
    private readonly metrics: OddsMetrics,
    private readonly log: Logger,
  ) {}

  async accept(data: unknown): Promise<IngestResult> {
    const t0 = performance.now();
    try {
      const result = await this.acceptChecked(data, t0);
      this.metrics.ingestBatches.inc({ outcome: 'ok' });
      return result;
    } catch (err) {
      this.metrics.ingestBatches.inc({ outcome: isDatabaseError(err) ? 'unavailable' : 'rejected' });
      throw err;
    }
  }

  private async acceptChecked(data: unknown, t0: number): Promise<IngestResult> {
    if (!Array.isArray(data)) throw errors.badBody('must be {"data": [item, ...]}');
    if (data.length === 0 || data.length > this.maxItems) throw errors.badParam('data', `must hold 1 to ${this.maxItems} items, got ${data.length}`);
    this.touch();
    const { reference, odds, unseen } = this.check(data);
    if (unseen.size) await this.confirmMarkets(unseen);
    const outcomes = reference.length ? await writeReference(this.pool, reference, this.log) : [];
    const pt = Date.now();
    const seqs = await Promise.all(odds.map((image) => this.bus.sequence(image, pt)));
    for (const [i, image] of odds.entries()) {
      const entry = this.book.apply(image, pt, seqs[i]);
      if (!entry) continue;
      this.broadcaster.publish(entry);
      this.bus.publishOdds(entry.mid, entry.frame('proto') as Uint8Array);
    }
    if (odds.length) {
      this.metrics.oddsIngested.inc(odds.length);
      this.metrics.ingestToPublish.observe((performance.now() - t0) / 1000);
    }
    for (const [, item] of reference) this.metrics.ingestItems.inc({ kind: item.kind });
    if (odds.length) this.metrics.ingestItems.inc({ kind: 'odds' }, odds.length);
    const inserted = outcomes.filter((o) => o === 'inserted').length;
    return { count: data.length, inserted, updated: outcomes.length - inserted };
  }

  /** A publisher was heard from, here or on another pod. */
  touch(): void {
    this.lastAt = Date.now();
    this.broadcaster.setFeed('OK');
  }

  /**
   * Odds for markets the read model does not hold yet are checked against
   * Postgres: a market committed a moment ago (here or on another pod) is
   * known there before its NOTIFY reaches the model. Still unknown: 400.
   */
  private async confirmMarkets(unseen: Map<string, string>): Promise<void> {
    const { rows } = await this.pool.query<{ mid: string }>('SELECT mid FROM markets WHERE mid = ANY($1)', [[...unseen.keys()]])
      .catch(() => ({ rows: [] as { mid: string }[] }));
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
        if (!this.model.knows(mid) && !created.has(mid) && !unseen.has(mid)) unseen.set(mid, where);
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
