import { bettingTypeOf, type Event, type Market, type MarketFacts, type MarketResult, type MarketType, type Sport } from './types.js';
import { TextTable } from '../lib/text-table.js';
import { eventToWire, marketToWire, resultToWire, settlementToWire, sportToWire, termsToWire, type WireMarketTerms } from './wire.js';

export interface Entry<T> {
  readonly value: T;
  /** The element in its REST form, translated and serialised once, when it changed, not per request. */
  readonly json: string;
  /** What it carries beyond its REST keys (a market's terms, a result's settlement), serialised to compare; '' when nothing. */
  readonly more: string;
}

const entryOf = <T>(toWire: (value: T) => object, beyond: (value: T) => object | undefined = () => undefined) => (value: T): Entry<T> => {
  const more = beyond(value);
  return { value, json: JSON.stringify(toWire(value)), more: more ? JSON.stringify(more) : '' };
};
export const eventEntry = entryOf(eventToWire);
export const marketEntry = entryOf(marketToWire, (m) => m.terms && termsToWire(m.terms));
export const resultEntry = entryOf(resultToWire, (r) => r.settlement && settlementToWire(r.settlement));

/** Bytes of their own, outside Node's shared 8 KiB pool, of which one long-lived slice would keep all. */
function bytes(json: string): Buffer {
  const out = Buffer.allocUnsafeSlow(Buffer.byteLength(json));
  out.write(json);
  return out;
}
const EMPTY = bytes('[]');

const byStartThenId = (a: Entry<Event>, b: Entry<Event>): number =>
  a.value.startTime < b.value.startTime ? -1 : a.value.startTime > b.value.startTime ? 1 : a.value.id - b.value.id;
const byDisplayThenId = (a: Entry<Market>, b: Entry<Market>): number =>
  (a.value.displayOrder ?? -1) - (b.value.displayOrder ?? -1) || (a.value.id < b.value.id ? -1 : a.value.id > b.value.id ? 1 : 0);

function addTo<K, V>(index: Map<K, Set<V>>, key: K, value: V): void {
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  set.add(value);
}

/**
 * Everything REST reads, in memory, so no request waits on Postgres. Elements
 * are serialised when they change; per-sport and per-event arrays are joined
 * on first read after a change and kept until the next one. How it is kept
 * equal to Postgres is the ReadModel's part (model.ts).
 */
export class Collections {
  protected sports = new Map<number, Sport>();
  protected sportsBody: Buffer | undefined;
  protected events = new Map<number, Entry<Event>>();
  protected eventsBySport = new Map<number, Set<number>>();
  /** Joined on first read after a change, only for sports and events that exist: asking for unknown IDs adds nothing. */
  protected sortedBySport = new Map<number, Entry<Event>[]>();
  protected eventsBody = new Map<number, Buffer>();
  protected markets = new Map<string, Entry<Market>>();
  protected marketsByEvent = new Map<number, Set<string>>();
  protected marketsBody = new Map<number, Buffer>();
  /** Looked up by IDs where a query string writes them (`resultJsonAt`). */
  protected results = new TextTable<Entry<MarketResult>>();
  protected nestedParent = new Map<string, string>();
  protected generation = 0;

  /** Changes whenever anything REST answers may have changed. */
  get version(): number {
    return this.generation;
  }

  sportsJson(): Buffer {
    return (this.sportsBody ??= bytes('[' + [...this.sports.values()].sort((a, b) => a.id - b.id).map((s) => JSON.stringify(sportToWire(s))).join(',') + ']'));
  }

  /** The JSON array of a sport's events: kept bytes, or with `leagues` a string of only theirs (not kept). */
  eventsJson(si: number, leagues?: ReadonlySet<number>): Buffer | string {
    const eids = this.eventsBySport.get(si);
    if (!eids?.size) return EMPTY;
    let sorted = this.sortedBySport.get(si);
    if (!sorted) this.sortedBySport.set(si, (sorted = [...eids].map((eid) => this.events.get(eid)!).sort(byStartThenId)));
    if (leagues) return '[' + sorted.filter((e) => leagues.has(e.value.leagueId)).map((e) => e.json).join(',') + ']';
    let body = this.eventsBody.get(si);
    if (!body) this.eventsBody.set(si, (body = bytes('[' + sorted.map((e) => e.json).join(',') + ']')));
    return body;
  }

  marketsJson(eid: number): Buffer {
    const mids = this.marketsByEvent.get(eid);
    if (!mids?.size) return EMPTY;
    let body = this.marketsBody.get(eid);
    if (!body) {
      const list = [...mids].map((mid) => this.markets.get(mid)!).sort(byDisplayThenId);
      this.marketsBody.set(eid, (body = bytes('[' + list.map((m) => m.json).join(',') + ']')));
    }
    return body;
  }

  resultJson(mid: string): string | undefined {
    return this.results.get(mid)?.json;
  }

  /** The REST element of the result of the market whose ID is written in `text` from `start` to `end`. */
  resultJsonAt(text: string, start: number, end: number): string | undefined {
    const slot = this.results.slotOf(text, start, end);
    return slot < 0 ? undefined : this.results.valueAt(slot).json;
  }

  /** A known market's terms and settlement (a nested market has no terms of its own); undefined when the market is unknown. */
  termsOf(mid: string): WireMarketTerms | undefined {
    const top = this.markets.get(mid)?.value;
    if (!top && !this.nestedParent.has(mid)) return undefined;
    const out: WireMarketTerms = { mid, terms: top?.terms ? termsToWire(top.terms) : {} };
    const settlement = this.results.get(mid)?.value.settlement;
    if (settlement) out.settlement = settlementToWire(settlement);
    return out;
  }

  /** Every market of an event, nested player-race markets included. */
  eventMarkets(eid: number): string[] {
    const out: string[] = [];
    for (const mid of this.marketsByEvent.get(eid) ?? []) {
      out.push(mid);
      for (const n of this.markets.get(mid)?.value.nested ?? []) out.push(n.id);
    }
    return out;
  }

  /** Every market of a sport's events, nested ones included. */
  sportMarkets(si: number): string[] {
    return [...(this.eventsBySport.get(si) ?? [])].flatMap((eid) => this.eventMarkets(eid));
  }

  /** Whether a market, top-level or nested, has concluded (a nested one also when its player-race has). */
  concluded(mid: string): boolean {
    const parent = this.nestedParent.get(mid);
    if (parent === undefined) return this.markets.get(mid)?.value.concluded ?? false;
    const p = this.markets.get(parent)?.value;
    return (p?.concluded ?? false) || (p?.nested?.find((n) => n.id === mid)?.concluded ?? false);
  }

  /**
   * What a subscribe's filters look at of a market (a nested market: its player race's), or
   * undefined when the market is unknown.
   */
  factsOf(mid: string): MarketFacts | undefined {
    const m = this.markets.get(this.nestedParent.get(mid) ?? mid)?.value;
    if (!m) return undefined;
    const { country, turnInPlay } = m.terms ?? {};
    return { type: m.type, bettingType: bettingTypeOf(m), ...(country === undefined ? {} : { country }), ...(turnInPlay === undefined ? {} : { turnInPlay }) };
  }

  /** A market's type: null for a market nested in a player-race (it has none of its own), undefined when unknown. */
  typeOf(mid: string): MarketType | null | undefined {
    return this.nestedParent.has(mid) ? null : this.markets.get(mid)?.value.type;
  }

  /** Whether a known market lists runners of its own (a nested market always does); undefined when unknown. */
  hasRunners(mid: string): boolean | undefined {
    if (this.nestedParent.has(mid)) return true;
    const m = this.markets.get(mid)?.value;
    return m && (m.runners?.length ?? 0) > 0;
  }

  /** The name of a market's sport (a nested market's: its player race's), or undefined when the market is unknown. */
  sportOf(mid: string): string | undefined {
    const m = this.markets.get(this.nestedParent.get(mid) ?? mid)?.value;
    return m && (this.sports.get(m.sportId)?.name ?? String(m.sportId));
  }

  event(eid: number): Event | undefined {
    return this.events.get(eid)?.value;
  }

  allEvents(): Event[] {
    return [...this.events.values()].map((e) => e.value);
  }

  allMarkets(): IterableIterator<Market> {
    return [...this.markets.values()].map((e) => e.value).values();
  }

  get size(): { sports: number; events: number; markets: number; results: number } {
    return { sports: this.sports.size, events: this.events.size, markets: this.markets.size, results: this.results.size };
  }

  protected putEvent(e: Event): void {
    this.events.set(e.id, eventEntry(e));
    addTo(this.eventsBySport, e.sportId, e.id);
    this.sortedBySport.delete(e.sportId);
    this.eventsBody.delete(e.sportId);
  }

  protected dropEvent(e: Event): void {
    this.events.delete(e.id);
    this.eventsBySport.get(e.sportId)?.delete(e.id);
    this.sortedBySport.delete(e.sportId);
    this.eventsBody.delete(e.sportId);
  }

  protected putMarket(m: Market): void {
    this.markets.set(m.id, marketEntry(m));
    addTo(this.marketsByEvent, m.eventId, m.id);
    this.marketsBody.delete(m.eventId);
  }

  protected dropMarket(m: Market): void {
    this.markets.delete(m.id);
    this.marketsByEvent.get(m.eventId)?.delete(m.id);
    this.marketsBody.delete(m.eventId);
  }
}
