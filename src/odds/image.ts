/**
 * An odds image as the service reasons about it: readable names, whatever keys the wire gives
 * them. Publishers' items become images in ingest's check (ingest/validate-odds.ts), which the bus
 * and the record also read their frames through; images become wire messages here, where frames
 * are encoded (the book, the bus, the record), and ingest items where a publisher sends them (the
 * simulator's feed, the Betfair adapter). Browser-safe.
 */
import type { IngestItemInput, MarketStatus, OddsMessage, PriceSize, RunnerOdds, RunnerStatus } from './messages.js';

/** One runner's prices. For session (fancy) markets a ladder level is [run line, rate]. */
export interface RunnerPrices {
  runnerId: number;
  status: RunnerStatus;
  /** Back (Yes for session markets), best first. */
  back: PriceSize[];
  /** Lay (No for session markets), best first. */
  lay: PriceSize[];
  /** Last traded price (the last traded line on a line market); absent means unknown. */
  lastTraded?: number;
  /** Volume traded on this runner; absent means unknown, not 0. */
  tradedVolume?: number;
}

/** A full image of one market's book, as a publisher sends it and the book keeps it. */
export interface OddsImage {
  marketId: string;
  /** When its source made it, ms. */
  sourceTime: number;
  status: MarketStatus;
  /** Why it is SUSPENDED or BALL_RUNNING, when the source says: `goal`, `wicket`, `VAR`, `ball running`, or a publisher's own words. */
  suspensionReason?: string;
  inPlay: boolean;
  runners: RunnerPrices[];
  /** Total matched on the market; absent means unknown, not 0. */
  tradedVolume?: number;
}

/** Where an image stands in its market's order, and how the socket it goes to got the ones before it. */
export interface FrameHead {
  epoch: string;
  seq: number;
  publishTime: number;
  /** Frames of this market were skipped for this socket (too slow) before this one. */
  skipped?: boolean;
  /** Updates of this market were held back by the socket's own conflation before this one. */
  conflated?: boolean;
}

/** A runner in its wire form, its ladders cut to `depth` levels a side (0: all). */
function wireRunner(x: RunnerPrices, depth = 0): RunnerOdds {
  const out: RunnerOdds = {
    rid: x.runnerId, st: x.status, b: depth === 0 ? x.back : x.back.slice(0, depth), l: depth === 0 ? x.lay : x.lay.slice(0, depth),
  };
  if (x.lastTraded !== undefined) out.ltp = x.lastTraded;
  if (x.tradedVolume !== undefined) out.tv = x.tradedVolume;
  return out;
}

/**
 * The odds frame's message of an image, built in one object literal (this runs once per variant
 * of every update); the codecs (codec.ts) put its keys in protocol order.
 */
export function oddsMessage(image: OddsImage, head: FrameHead, depth = 0): OddsMessage {
  const msg: OddsMessage = {
    op: 'odds', mid: image.marketId, epoch: head.epoch, seq: head.seq, ts: image.sourceTime, pt: head.publishTime, st: image.status, ip: image.inPlay,
    con: head.skipped === true, cf: head.conflated === true, r: image.runners.map((x) => wireRunner(x, depth)),
  };
  if (image.suspensionReason !== undefined) msg.sr = image.suspensionReason;
  if (image.tradedVolume !== undefined) msg.tv = image.tradedVolume;
  return msg;
}

/** An `odds` ingest item carrying the image, as a publisher sends it; `late` when its source says its data is late. */
export function oddsItem(image: OddsImage, late = false): IngestItemInput {
  const item: IngestItemInput = { kind: 'odds', mid: image.marketId, ts: image.sourceTime, st: image.status, ip: image.inPlay, r: image.runners.map((x) => wireRunner(x)) };
  if (image.suspensionReason !== undefined) item.sr = image.suspensionReason;
  if (image.tradedVolume !== undefined) item.tv = image.tradedVolume;
  if (late) item.late = true;
  return item;
}
