import type pg from 'pg';
import type { OddsImage } from '../odds/image.js';
import type { ItemRefusal, PublisherStaleReason } from '../odds/messages.js';
import type { ReadModel } from '../refdata/model.js';
import type { MarketType } from '../refdata/types.js';
import { asDatabaseError } from '../db/pool.js';
import { checkPrices, pricingOf, type Pricing } from './prices.js';
import type { ReferenceItem } from './items.js';
import type { BetStop, ReadItems } from './batch.js';

/** The newest image of a market (the book, through the odds relay): what a bet stop suspends. */
export interface HeldImages {
  image(mid: string): OddsImage | undefined;
}
import type { SourceTime } from './source-time.js';
import type { Feeder } from '../relay/freshness.js';

/** An image to publish, its index in the batch, and whether its source says it is late. */
export interface AcceptedImage {
  i: number;
  image: OddsImage;
  late: boolean;
}

/** A `stale` item accepted: its index in the batch, the market and the reason its publisher gives. */
export interface AcceptedStale {
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
  stale: AcceptedStale[];
  refused: RefusedItem[];
}

/**
 * The odds path of a batch (odds images and `stale` items, read as candidates where the batch
 * arrived), judged item by item against their markets when the batch runs: a bad one is refused
 * alone, with its index, market and why, and the batch's others go ahead. Reference items are not
 * judged here: they stay all or nothing per batch.
 */
export class OddsJudge {
  constructor(
    private readonly pool: pg.Pool,
    private readonly model: Pick<ReadModel, 'typeOf' | 'hasRunners' | 'event' | 'eventMarkets' | 'factsOf'>,
    private readonly times: SourceTime,
    private readonly held: HeldImages,
    /** Images a batch's suspend items may publish in all (INGEST_MAX_ITEMS): a few bytes of them may name every market of an event. */
    private readonly maxStopped: number,
  ) {}

  /**
   * Each candidate against its market, priced as a market item earlier in the batch leaves it
   * (a nested market is a runner market), else as the read model holds it, else as Postgres
   * does (committed a moment ago, here or on another pod, and known there before its NOTIFY
   * reaches the model). Still unknown: refused. Then each image against its market's price rule
   * (`checkPrices`), and its source time against the server's clock and what its publisher sent
   * before (`SourceTime`). Postgres not answering refuses the batch, never blamed on the publisher.
   */
  async judge({ reference, odds }: ReadItems, feeder?: Feeder): Promise<JudgedOdds> {
    const created = new Map<string, Pricing>();
    let r = 0;
    const priced = odds.map((c) => {
      for (; r < reference.length && reference[r][0] < c.i; r++) this.learn(reference[r][1], created);
      return c.mid === undefined ? undefined : created.get(c.mid) ?? this.modelPricing(c.mid);
    });
    const stored = await this.lookUp(odds.filter((c, k) => priced[k] === undefined && c.mid !== undefined).map((c) => c.mid!));
    const out: JudgedOdds = { images: [], stale: [], refused: [] };
    /** The newest source time accepted in this batch per market: the batch's images must keep its order too. */
    const newest = new Map<string, number>();
    let stopped = 0;
    for (const [k, c] of odds.entries()) {
      const how = priced[k] ?? (c.mid === undefined ? undefined : stored.get(c.mid));
      const { read } = c;
      if ('stop' in read) {
        stopped += this.stop(c.i, c.where, read.stop, out, feeder, this.maxStopped - stopped, newest);
        continue;
      }
      let error = 'error' in read ? read.error : how === undefined ? `market ${c.mid} is not known` : undefined;
      if (!error && 'image' in read) error = checkPrices(read.image, how!);
      const time = !error && 'image' in read ? this.time(read.image, newest, feeder) : undefined;
      if (time && 'error' in time) error = time.error;
      if (error) out.refused.push({ i: c.i, mid: c.mid ?? '', message: `${c.where}: ${error}`, known: how !== undefined });
      else if ('image' in read) {
        newest.set(read.image.marketId, read.image.sourceTime);
        out.images.push({ i: c.i, image: read.image, late: read.late || (time !== undefined && 'late' in time && time.late) });
      } else out.stale.push({ i: c.i, ...(read as { mid: string; why: PublisherStaleReason }) });
    }
    return out;
  }

  /**
   * A bet stop: the newest image of each market of the event (of its types) that trades, again,
   * SUSPENDED with its reason at the stop's source time; refused when the event is not known,
   * that time is ahead of the server's clock, or it would publish more than the `room` the
   * batch's suspend items have left; late when it is old. A market its publisher already sent
   * a newer image of (`newest` in this batch, else before) is left as it is, as an odds item that
   * old would be: stopped at the older time, it let an image older than its newest in after it.
   * Returns the images it publishes.
   */
  private stop(i: number, where: string, s: BetStop, out: JudgedOdds, feeder: Feeder | undefined, room: number, newest: Map<string, number>): number {
    const time = this.times.judge(s.sourceTime, undefined, feeder?.replay ?? false);
    const error = !this.model.event(s.eventId) ? `event ${s.eventId} is not known` : 'error' in time ? time.error : undefined;
    const held: OddsImage[] = [];
    // Counted only as far as the room: past it the item is refused, however many more it names.
    for (const mid of error ? [] : this.model.eventMarkets(s.eventId)) {
      const image = this.held.image(mid);
      const type = this.model.factsOf(mid)?.type;
      const prior = newest.get(mid) ?? feeder?.times.get(mid);
      if (!image || image.status === 'CLOSED' || (prior !== undefined && s.sourceTime < prior)) continue;
      if ((!s.types || (type !== undefined && s.types.has(type))) && held.push(image) > room) break;
    }
    const over = held.length > room ? `it would suspend more markets than the ${room} of the ${this.maxStopped} images a batch's suspend items may publish in all that are left (INGEST_MAX_ITEMS)` : undefined;
    if (error ?? over) {
      out.refused.push({ i, mid: '', message: `${where}: ${error ?? over}`, known: false });
      return 0;
    }
    for (const image of held) {
      newest.set(image.marketId, s.sourceTime);
      out.images.push({ i, image: { ...image, sourceTime: s.sourceTime, status: 'SUSPENDED', suspensionReason: s.suspensionReason }, late: 'late' in time && time.late });
    }
    return held.length;
  }

  /** An image's source time, judged against the newest its publisher sent for its market (in this batch, else before). */
  private time(image: OddsImage, newest: ReadonlyMap<string, number>, feeder: Feeder | undefined) {
    return this.times.judge(image.sourceTime, newest.get(image.marketId) ?? feeder?.times.get(image.marketId), feeder?.replay ?? false);
  }

  /** How a market item leaves its market's pricing: a partial one changes only what it carries, the rest is as the model holds it. */
  private learn(item: ReferenceItem, created: Map<string, Pricing>): void {
    if (item.kind !== 'market') return;
    const type = item.type !== undefined ? item.type : this.model.typeOf(item.id);
    const runners = item.runners !== undefined ? item.runners.length > 0 : (this.model.hasRunners(item.id) ?? false);
    if (type !== undefined) created.set(item.id, pricingOf(type, runners));
    for (const n of item.nested ?? []) created.set(n.id, 'runner');
  }

  private modelPricing(mid: string): Pricing | undefined {
    const ty = this.model.typeOf(mid);
    return ty === undefined ? undefined : pricingOf(ty, this.model.hasRunners(mid) ?? false);
  }

  private async lookUp(mids: readonly string[]): Promise<Map<string, Pricing>> {
    const unseen = [...new Set(mids)];
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
