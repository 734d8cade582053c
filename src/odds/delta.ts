/**
 * Ladder deltas: what changed from one image of a market to the next, by ladder position, and
 * how a client puts it back together. Browser-safe (no Node imports): the server computes
 * deltas with it, from its images to the delta's wire keys, and the client library and tests
 * apply them with it, to the frames they hold.
 */
import type { OddsImage, RunnerPrices } from './image.js';
import type { DeltaMessage, Level, OddsMessage, PriceSize, RunnerDelta, RunnerOdds } from './messages.js';

/** The part of a delta that depends on the two images only, not on their numbering: in its wire keys. */
export type DeltaBody = Pick<DeltaMessage, 'ts' | 'st' | 'sr' | 'ip' | 'r' | 'tv'>;

/** Positions that differ, set to what `b` holds; positions `b` no longer has, cleared with [i, 0, 0]. */
function ladder(a: PriceSize[], b: PriceSize[]): Level[] | undefined {
  let out: Level[] | undefined;
  for (let i = 0; i < b.length; i++) {
    if (i >= a.length || a[i][0] !== b[i][0] || a[i][1] !== b[i][1]) (out ??= []).push([i, b[i][0], b[i][1]]);
  }
  for (let i = b.length; i < a.length; i++) (out ??= []).push([i, 0, 0]);
  return out;
}

/** A key that was known cannot be made unknown by a delta (absent means unchanged). */
const vanished = (a: number | undefined, b: number | undefined): boolean => a !== undefined && b === undefined;

function runner(a: RunnerPrices, b: RunnerPrices): RunnerDelta | null | undefined {
  if (vanished(a.lastTraded, b.lastTraded) || vanished(a.tradedVolume, b.tradedVolume)) return null;
  const d: RunnerDelta = { rid: b.runnerId };
  if (a.status !== b.status) d.st = b.status;
  const back = ladder(a.back, b.back);
  if (back) d.b = back;
  const lay = ladder(a.lay, b.lay);
  if (lay) d.l = lay;
  if (a.lastTraded !== b.lastTraded) d.ltp = b.lastTraded;
  if (a.tradedVolume !== b.tradedVolume) d.tv = b.tradedVolume;
  // Only `rid`: this runner did not change.
  return Object.keys(d).length > 1 ? d : undefined;
}

/**
 * The delta from image `a` to image `b` (both already cut to the depth sent), or undefined when
 * only an image can say it: the runners differ (which, or their order), or a known last traded
 * price or traded volume became unknown.
 */
export function diff(a: OddsImage, b: OddsImage): DeltaBody | undefined {
  if (a.runners.length !== b.runners.length || vanished(a.tradedVolume, b.tradedVolume)) return undefined;
  const r: RunnerDelta[] = [];
  for (let i = 0; i < b.runners.length; i++) {
    if (a.runners[i].runnerId !== b.runners[i].runnerId) return undefined;
    const d = runner(a.runners[i], b.runners[i]);
    if (d === null) return undefined;
    if (d) r.push(d);
  }
  const body: DeltaBody = { ts: b.sourceTime, st: b.status, ip: b.inPlay, r };
  if (b.suspensionReason !== undefined) body.sr = b.suspensionReason;
  if (b.tradedVolume !== undefined && b.tradedVolume !== a.tradedVolume) body.tv = b.tradedVolume;
  return body;
}

/** Sets and clears positions; undefined unless the ladder ends contiguous from 0. */
function setLevels(held: PriceSize[], changes: Level[] | undefined): PriceSize[] | undefined {
  if (!changes) return held;
  const out: (PriceSize | undefined)[] = held.slice();
  for (const [i, price, size] of changes) {
    // Beyond this no change set could leave the ladder contiguous; refused before it allocates.
    if (!Number.isInteger(i) || i < 0 || i >= held.length + changes.length) return undefined;
    out[i] = price === 0 && size === 0 ? undefined : [price, size];
  }
  while (out.length && out[out.length - 1] === undefined) out.pop();
  for (let i = 0; i < out.length; i++) if (out[i] === undefined) return undefined;
  return out as PriceSize[];
}

function applyRunner(x: RunnerOdds, d: RunnerDelta): RunnerOdds | undefined {
  const b = setLevels(x.b, d.b);
  const l = setLevels(x.l, d.l);
  if (!b || !l) return undefined;
  const out: RunnerOdds = { rid: x.rid, st: d.st ?? x.st, b, l };
  const ltp = d.ltp ?? x.ltp;
  const tv = d.tv ?? x.tv;
  if (ltp !== undefined) out.ltp = ltp;
  if (tv !== undefined) out.tv = tv;
  return out;
}

/**
 * The image a delta leads to from the one held, or undefined when it does not apply: the held
 * image is not the one with seq `from` in the delta's epoch, or the delta names a runner the
 * image lacks or leaves a ladder with a gap. The client then asks again with `since`.
 */
export function applyDelta(held: OddsMessage, d: DeltaMessage): OddsMessage | undefined {
  if (held.mid !== d.mid || held.epoch !== d.epoch || held.seq !== d.from) return undefined;
  const changes = new Map<number, RunnerDelta>();
  for (const x of d.r) changes.set(x.rid, x);
  if (changes.size !== d.r.length) return undefined;
  let found = 0;
  const r: RunnerOdds[] = [];
  for (const x of held.r) {
    const c = changes.get(x.rid);
    if (!c) {
      r.push(x);
      continue;
    }
    found++;
    const next = applyRunner(x, c);
    if (!next) return undefined;
    r.push(next);
  }
  if (found !== changes.size) return undefined;
  const out: OddsMessage = { op: 'odds', mid: d.mid, epoch: d.epoch, seq: d.seq, ts: d.ts, pt: d.pt, st: d.st, ip: d.ip, con: false, cf: false, r };
  // The market's state comes whole with every delta: its reason too, absent when there is none.
  if (d.sr !== undefined) out.sr = d.sr;
  const tv = d.tv ?? held.tv;
  if (tv !== undefined) out.tv = tv;
  return out;
}
