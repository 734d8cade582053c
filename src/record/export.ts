import type { MarketType } from '../refdata/types.js';
import type { MarketStatus, PriceSize, RunnerStatus } from '../odds/messages.js';
import type { RecordedImage } from './query.js';

/** What Betfair's definition needs of the market and its event beyond the images: from the service's reference data. */
export interface MarketReference {
  mid: string;
  si: number;
  eid: number;
  name: string;
  type: MarketType | null;
  eventName: string;
  /** The event's start, ISO 8601. */
  openDate: string;
  runners: ReadonlyMap<number, string>;
}

/** The service's market types as Betfair names them (the adapter's mapping, backwards); the rest are kept apart by the name. */
const BETFAIR_TYPE: Partial<Record<MarketType, string>> = {
  'match-odd': 'MATCH_ODDS', 'completed-match': 'COMPLETED_MATCH', 'tied-match': 'TIED_MATCH', goals: 'OVER_UNDER_25',
  'winner-market': 'WIN', 'odd-even': 'ODD_OR_EVEN',
};
/** Betfair has no ball-running state: a market not taking bets is SUSPENDED there. */
const MARKET_STATUS: Record<MarketStatus, string> = { OPEN: 'OPEN', SUSPENDED: 'SUSPENDED', BALL_RUNNING: 'SUSPENDED', CLOSED: 'CLOSED' };
/** The adapter reads HIDDEN as SUSPENDED; the rest are the same words. */
const RUNNER_STATUS: Record<RunnerStatus, string> = { ACTIVE: 'ACTIVE', SUSPENDED: 'HIDDEN', WINNER: 'WINNER', LOSER: 'LOSER', REMOVED: 'REMOVED' };

type Obj = Record<string, unknown>;

/** The price levels that changed from `a` to `b`: [price, size], size 0 where a price left the ladder. */
function ladderDelta(a: readonly PriceSize[], b: readonly PriceSize[]): PriceSize[] {
  const before = new Map(a.map(([p, s]) => [p, s]));
  const out: PriceSize[] = [];
  for (const [p, s] of b) if (before.get(p) !== s) out.push([p, s]);
  const after = new Set(b.map(([p]) => p));
  for (const [p] of a) if (!after.has(p)) out.push([p, 0]);
  return out;
}

/**
 * A market's recorded images as a Betfair historic stream file: one `mcm` a line, each with the
 * image's source time as `pt` and one market change. The first change is an image (`img: true`)
 * with the market definition; each later one carries the ladder levels that changed (`atb`,
 * `atl`, size 0 removing a price), `ltp` and `tv` where they changed, and the definition again
 * (sent whole, as Betfair does) whenever the market's status, in-play flag or runners changed.
 * Replayed through the Betfair adapter (`npm run replay`), it publishes the same images again.
 */
export class BetfairExport {
  private prev: RecordedImage | undefined;
  private defKey = '';
  private version = 1;
  private clk = 0;

  constructor(private readonly ref: MarketReference) {}

  /** The line for the next image, in order. */
  line(image: RecordedImage): string {
    const prev = this.prev;
    const fresh = !prev || prev.r.length !== image.r.length || prev.r.some((x, i) => x.rid !== image.r[i].rid);
    const mc: Obj = { id: this.ref.mid };
    const def = this.definition(image);
    const key = JSON.stringify([def.status, def.inPlay, def.runners]);
    if (fresh || key !== this.defKey) {
      this.defKey = key;
      mc.marketDefinition = { ...def, version: this.version++ };
    }
    if (fresh) mc.img = true;
    mc.rc = image.r.map((x, i) => {
      const before = fresh ? undefined : prev!.r[i];
      const rc: Obj = { id: x.rid };
      const atb = ladderDelta(before?.b ?? [], x.b);
      const atl = ladderDelta(before?.l ?? [], x.l);
      if (atb.length) rc.atb = atb;
      if (atl.length) rc.atl = atl;
      if (x.ltp !== undefined && x.ltp !== before?.ltp) rc.ltp = x.ltp;
      if (x.tv !== undefined && x.tv !== before?.tv) rc.tv = x.tv;
      return rc;
    }).filter((rc) => Object.keys(rc).length > 1);
    if (!(mc.rc as Obj[]).length) delete mc.rc;
    if (image.tv !== undefined && image.tv !== prev?.tv) mc.tv = image.tv;
    this.prev = image;
    return JSON.stringify({ op: 'mcm', clk: String(++this.clk), pt: image.ts, mc: [mc] });
  }

  private definition(image: RecordedImage): Obj {
    const { ref } = this;
    const type = ref.type ? BETFAIR_TYPE[ref.type] : undefined;
    return {
      eventTypeId: String(ref.si), eventId: String(ref.eid), marketType: type ?? 'OTHER', bettingType: ref.type === 'line-market' ? 'LINE' : 'ODDS',
      status: MARKET_STATUS[image.st], inPlay: image.ip, betDelay: 0, marketTime: ref.openDate, openDate: ref.openDate, timezone: 'UTC',
      name: ref.name, eventName: ref.eventName, numberOfWinners: 1, complete: true,
      runners: image.r.map((x, i) => ({ id: x.rid, status: RUNNER_STATUS[x.st], sortPriority: i + 1, name: ref.runners.get(x.rid) ?? `Selection ${x.rid}` })),
    };
  }
}
