import { isMarketId, isPositiveId } from '../refdata/ids.js';

/**
 * Names the stream leaves out, from a saved answer of Betfair's listMarketCatalogue: market and
 * runner names, the event's name, its sport's name and its competition (the service's league).
 * Takes the answer as the API returns it, a JSON array of catalogue entries or the JSON-RPC
 * envelope `{"result": [...]}` around one.
 */
interface CatalogueMarket {
  marketName?: string;
  runners: ReadonlyMap<number, string>;
  eventName?: string;
  competition?: { li: number; na: string };
}

/** Far above one listMarketCatalogue answer (Betfair caps those at 1000 markets). */
const MAX_CATALOGUE_MARKETS = 100_000;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const text = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v.slice(0, 500) : undefined);
const idOf = (v: unknown): number | undefined => {
  const n = typeof v === 'string' && /^[1-9]\d*$/.test(v) ? Number(v) : v;
  return isPositiveId(n) ? n : undefined;
};

export class Catalogue {
  private constructor(
    private readonly markets: ReadonlyMap<string, CatalogueMarket>,
    private readonly sports: ReadonlyMap<number, string>,
  ) {}

  market(mid: string): CatalogueMarket | undefined {
    return this.markets.get(mid);
  }

  sportName(si: number): string | undefined {
    return this.sports.get(si);
  }

  get size(): number {
    return this.markets.size;
  }

  /** The catalogue, or the first problem naming the entry and key. */
  static parse(json: unknown): Catalogue | string {
    const list = isObj(json) ? json.result : json;
    if (!Array.isArray(list)) return 'must be a JSON array of market catalogue entries, or {"result": [...]}';
    if (list.length > MAX_CATALOGUE_MARKETS) return `must hold at most ${MAX_CATALOGUE_MARKETS} markets`;
    const markets = new Map<string, CatalogueMarket>();
    const sports = new Map<number, string>();
    for (const [i, entry] of list.entries()) {
      if (!isObj(entry) || !isMarketId(entry.marketId)) return `entry ${i}: marketId must be a market ID`;
      const runners = new Map<number, string>();
      for (const [j, r] of (Array.isArray(entry.runners) ? entry.runners : []).entries()) {
        if (!isObj(r) || !isPositiveId(r.selectionId) || !text(r.runnerName)) return `entry ${i}: runners[${j}] must have a selectionId and a runnerName`;
        runners.set(r.selectionId, text(r.runnerName)!);
      }
      const comp = isObj(entry.competition) ? entry.competition : {};
      const li = idOf(comp.id);
      const sport = isObj(entry.eventType) ? entry.eventType : {};
      const si = idOf(sport.id);
      if (si !== undefined && text(sport.name)) sports.set(si, text(sport.name)!);
      markets.set(entry.marketId, {
        marketName: text(entry.marketName),
        runners,
        eventName: isObj(entry.event) ? text(entry.event.name) : undefined,
        competition: li !== undefined && text(comp.name) ? { li, na: text(comp.name)! } : undefined,
      });
    }
    return new Catalogue(markets, sports);
  }
}
