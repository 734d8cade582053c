import { isLineType, type MarketType } from '../refdata/types.js';
import type { WireRunnerTerms, WireTerms } from '../refdata/wire.js';
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

/**
 * The service's market types as Betfair names them (the adapter's mapping, backwards). A type
 * Betfair has no name for goes as the service's own word (`session`, `other-market`): Betfair's
 * market types are upper case, so it can never be taken for one, and the adapter reads it back
 * as that type.
 */
const BETFAIR_TYPE: Partial<Record<MarketType, string>> = {
  'match-odd': 'MATCH_ODDS', 'completed-match': 'COMPLETED_MATCH', 'tied-match': 'TIED_MATCH', goals: 'OVER_UNDER_25',
  'winner-market': 'WIN', 'odd-even': 'ODD_OR_EVEN',
};
/** Betfair has no ball-running state: a market not taking bets is SUSPENDED there. */
const MARKET_STATUS: Record<MarketStatus, string> = { OPEN: 'OPEN', SUSPENDED: 'SUSPENDED', BALL_RUNNING: 'SUSPENDED', CLOSED: 'CLOSED' };
/** The adapter reads HIDDEN as SUSPENDED; the rest are the same words. */
const RUNNER_STATUS: Record<RunnerStatus, string> = { ACTIVE: 'ACTIVE', SUSPENDED: 'HIDDEN', WINNER: 'WINNER', LOSER: 'LOSER', REMOVED: 'REMOVED' };

type Obj = Record<string, unknown>;

const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());

/** The keys given a value: a definition leaves out what the record does not hold. */
const given = (o: Obj): Obj => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));

/** The market's terms in Betfair's own definition keys (the adapter's mapping, backwards); a term not given is left out. */
function definitionTerms(t: WireTerms): Obj {
  const out: Obj = {
    betDelay: t.bd, turnInPlayEnabled: t.tip, suspendTime: iso(t.sus), bettingType: t.bt, numberOfWinners: t.nw, eachWayDivisor: t.ewd,
    bspMarket: t.bsp, countryCode: t.cc, venue: t.ven, raceType: t.race, marketBaseRate: t.mbr, regulators: t.reg,
    lineMinUnit: t.lmin, lineMaxUnit: t.lmax, lineInterval: t.lint,
  };
  return given(out);
}

/** A runner's terms in the definition's keys: the exchange's own status where the image's says the same (PLACED is a WINNER there). */
function runnerTerms(status: string, t: WireRunnerTerms | undefined): Obj {
  if (!t) return { status };
  const same = t.st === status || (t.st === 'PLACED' && status === 'WINNER');
  const out: Obj = { status: same ? t.st : status, adjustmentFactor: t.af, removalDate: iso(t.rd), hc: t.hc };
  return given(out);
}

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
  /** The market's terms as the record last told them (its `market` frames); none until one does. */
  private terms: WireTerms = {};

  constructor(private readonly ref: MarketReference) {}

  /** The terms a recorded `market` frame carried: the definitions from the next image on say them. */
  setTerms(terms: WireTerms | undefined): void {
    this.terms = terms ?? {};
  }

  /** The line for the next image, in order. */
  line(image: RecordedImage): string {
    const prev = this.prev;
    const fresh = !prev || prev.r.length !== image.r.length || prev.r.some((x, i) => x.rid !== image.r[i].rid);
    const mc: Obj = { id: this.ref.mid };
    const def = this.definition(image);
    const key = JSON.stringify(def);
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

  /**
   * Betfair's definition of the market at this image: its type and terms, and its runners. A market
   * the service prices as one line lists no runners of its own, while its image's runner carries
   * the lines: that runner goes without a name, which tells the adapter to leave it out of the
   * market's row (a row listing it would make the market a runner market, its lines crossed odds).
   */
  private definition(image: RecordedImage): Obj {
    const { ref, terms } = this;
    const line = ref.type === 'line-market' || (isLineType(ref.type) && ref.runners.size === 0);
    // Betfair's ODD_OR_EVEN trades odds on runners: an odd-even market priced as one line goes in
    // the service's own word, as a type Betfair has no name for does, so its runner goes unnamed.
    const type = ref.type ? (line ? undefined : BETFAIR_TYPE[ref.type]) ?? ref.type : 'OTHER';
    const own = type === ref.type;
    const runnerTermsById = new Map((terms.r ?? []).map((r) => [r.rid, r]));
    const name = (rid: number) => ref.runners.get(rid) ?? (own ? undefined : `Selection ${rid}`);
    return {
      eventTypeId: String(ref.si), eventId: String(ref.eid), marketType: type, bettingType: line ? 'LINE' : 'ODDS',
      status: MARKET_STATUS[image.st], inPlay: image.ip, betDelay: 0, marketTime: ref.openDate, openDate: ref.openDate, timezone: 'UTC',
      name: ref.name, eventName: ref.eventName, numberOfWinners: 1, complete: true, ...definitionTerms(terms),
      runners: image.r.map((x, i) => ({ id: x.rid, ...runnerTerms(RUNNER_STATUS[x.st], runnerTermsById.get(x.rid)), sortPriority: i + 1, ...(name(x.rid) === undefined ? {} : { name: name(x.rid) }) })),
    };
  }
}
