/**
 * Images written as tests write them, in the wire's keys (docs/protocol.md), turned into the
 * service's own (src/odds/image.ts) key for key, with no check: a test may hand the book or the
 * record an image ingest would refuse.
 */
import type { OddsImage, RunnerPrices } from '../../src/odds/image.js';
import type { RunnerOdds, WireOddsImage } from '../../src/odds/messages.js';

export function runnerOf(x: RunnerOdds): RunnerPrices {
  const out: RunnerPrices = { runnerId: x.rid, status: x.st, back: x.b, lay: x.l };
  if (x.ltp !== undefined) out.lastTraded = x.ltp;
  if (x.tv !== undefined) out.tradedVolume = x.tv;
  return out;
}

export function imageOf(w: WireOddsImage): OddsImage {
  const out: OddsImage = { marketId: w.mid, sourceTime: w.ts, status: w.st, inPlay: w.ip, runners: w.r.map(runnerOf) };
  if (w.sr !== undefined) out.suspensionReason = w.sr;
  if (w.tv !== undefined) out.tradedVolume = w.tv;
  return out;
}

/** The other way: an image of the service's back in the wire's keys, as a publisher sends it or a frame carries it. */
export function wireOf(image: OddsImage): WireOddsImage {
  const out: WireOddsImage = {
    mid: image.marketId, ts: image.sourceTime, st: image.status, ip: image.inPlay,
    r: image.runners.map((x) => {
      const r: RunnerOdds = { rid: x.runnerId, st: x.status, b: x.back, l: x.lay };
      if (x.lastTraded !== undefined) r.ltp = x.lastTraded;
      if (x.tradedVolume !== undefined) r.tv = x.tradedVolume;
      return r;
    }),
  };
  if (image.suspensionReason !== undefined) out.sr = image.suspensionReason;
  if (image.tradedVolume !== undefined) out.tv = image.tradedVolume;
  return out;
}
