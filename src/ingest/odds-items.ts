import type pg from 'pg';
import type { ItemRefusal, OddsImage, PublisherStaleReason } from '../odds/messages.js';
import { isMarketId } from '../refdata/ids.js';
import type { MarketType } from '../refdata/types.js';
import { asDatabaseError } from '../db/pool.js';
import { checkPrices, pricingOf, type Pricing } from './prices.js';
import { validateOddsItem, validateStale } from './validate-odds.js';

/** An image to publish, its index in the batch, and whether its source says it is late. */
export interface AcceptedImage {
  i: number;
  image: OddsImage;
  late: boolean;
}

/** A `stale` item accepted: its index in the batch, the market and the reason its publisher gives. */
export interface Mark {
  i: number;
  mid: string;
  why: PublisherStaleReason;
}

/** A refused item, with whether its market exists (then it is stale, `unreliable`, until its next image). */
export interface RefusedItem extends ItemRefusal {
  known: boolean;
}

/** A batch's odds and stale items, judged one by one. */
export interface JudgedOdds {
  images: AcceptedImage[];
  marks: Mark[];
  refused: RefusedItem[];
}

/** One odds or stale item after its shape was read: what it is, or why it is refused, and how its market is priced where known so far. */
interface Shaped {
  i: number;
  where: string;
  /** Its market ID when it is one. */
  mid: string | undefined;
  /** undefined: ask Postgres. */
  pricing: Pricing | undefined;
  item: { image: OddsImage; late: boolean } | { mid: string; why: PublisherStaleReason } | { error: string };
}

/**
 * The odds path of a batch (odds images and `stale` items), judged item by item: a bad one is
 * refused alone, with its index, market and why, and the batch's others go ahead. Reference items
 * are not judged here: they stay all or nothing per batch.
 */
export class OddsItems {
  private readonly shaped: Shaped[] = [];

  constructor(private readonly pool: pg.Pool) {}

  get size(): number {
    return this.shaped.length;
  }

  /**
   * Reads an item's shape. `pricing` is how its market is priced where that is known without
   * Postgres (from a market item earlier in the batch, else the read model); judge looks up the rest.
   */
  add(i: number, where: string, raw: Record<string, unknown>, pricing: Pricing | undefined): void {
    const item = raw.kind === 'odds' ? validateOddsItem(raw) : validateStale(raw);
    const mid = isMarketId(raw.mid) ? raw.mid : undefined;
    this.shaped.push({ i, where, mid, pricing: mid === undefined ? undefined : pricing, item });
  }

  /**
   * Every item against its market: one the read model does not hold yet is looked up in
   * Postgres (committed a moment ago, here or on another pod, and known there before its NOTIFY
   * reaches the model). Still unknown: refused. Then each image against its market's price rule.
   * Postgres not answering refuses the batch, never blamed on the publisher.
   */
  async judge(): Promise<JudgedOdds> {
    const stored = await this.lookUp();
    const out: JudgedOdds = { images: [], marks: [], refused: [] };
    for (const s of this.shaped) {
      const how = s.pricing ?? (s.mid === undefined ? undefined : stored.get(s.mid));
      const item = s.item;
      let error = 'error' in item ? item.error : how === undefined ? `market ${s.mid} is not known` : undefined;
      if (!error && 'image' in item) error = checkPrices(item.image, how!);
      if (error) out.refused.push({ i: s.i, mid: s.mid ?? '', message: `${s.where}: ${error}`, known: how !== undefined });
      else if ('image' in item) out.images.push({ i: s.i, image: item.image, late: item.late });
      else out.marks.push({ i: s.i, ...(item as { mid: string; why: PublisherStaleReason }) });
    }
    return out;
  }

  private async lookUp(): Promise<Map<string, Pricing>> {
    const unseen = [...new Set(this.shaped.filter((s) => s.pricing === undefined && s.mid !== undefined).map((s) => s.mid!))];
    const stored = new Map<string, Pricing>();
    if (!unseen.length) return stored;
    try {
      const { rows } = await this.pool.query<{ mid: string; ty: MarketType | null; runners: boolean }>(
        'SELECT m.mid, m.ty, EXISTS (SELECT 1 FROM runners r WHERE r.mid = m.mid) AS runners FROM markets m WHERE m.mid = ANY($1)', [unseen]);
      for (const r of rows) stored.set(r.mid, pricingOf(r.ty, r.runners));
    } catch (err) {
      throw asDatabaseError(err);
    }
    return stored;
  }
}
