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
