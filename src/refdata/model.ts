import type pg from 'pg';
import { loadEvents, loadMarkets, loadNestedParents, loadResults, loadSports } from './queries.js';
import type { Event, Market, MarketResult, Sport } from './types.js';

type Queryable = Pick<pg.Pool, 'query'>;

interface Entry<T> {
  readonly value: T;
  /** The element serialised once, when it changed, not per request. */
  readonly json: string;
}

const entry = <T>(value: T): Entry<T> => ({ value, json: JSON.stringify(value) });

/** Bytes of their own, outside Node's shared 8 KiB pool, of which one long-lived slice would keep all. */
function bytes(json: string): Buffer {
  const out = Buffer.allocUnsafeSlow(Buffer.byteLength(json));
  out.write(json);
  return out;
}
const EMPTY = bytes('[]');

/** What a refresh changed, for the frames subscribers get. Absent `after` means deleted. */
export type ModelChange =
  | { kind: 'market'; before?: Market; after?: Market }
  | { kind: 'result'; before?: MarketResult; after?: MarketResult };
const byStartThenId = (a: Entry<Event>, b: Entry<Event>): number =>
  a.value.st < b.value.st ? -1 : a.value.st > b.value.st ? 1 : a.value.eid - b.value.eid;
const byDisplayThenId = (a: Entry<Market>, b: Entry<Market>): number =>
  (a.value.di ?? -1) - (b.value.di ?? -1) || (a.value.mid < b.value.mid ? -1 : a.value.mid > b.value.mid ? 1 : 0);

/** What differs between two generations of one kind of element, by their serialised form. */
function diff<T>(kind: ModelChange['kind'], before: Map<string, Entry<T>>, after: Map<string, Entry<T>>): ModelChange[] {
  const out: ModelChange[] = [];
  for (const [id, e] of after) {
    const old = before.get(id);
    if (!old || old.json !== e.json) out.push({ kind, before: old?.value, after: e.value } as ModelChange);
  }
  for (const [id, old] of before) if (!after.has(id)) out.push({ kind, before: old.value } as ModelChange);
  return out;
}

function addTo<K, V>(index: Map<K, Set<V>>, key: K, value: V): void {
  let set = index.get(key);
  if (!set) index.set(key, (set = new Set()));
  set.add(value);
}

/**
 * Everything REST reads, in memory, so no request waits on Postgres. Elements
 * are serialised when they change; per-sport and per-event arrays are joined
 * on first read after a change and kept until the next one.
 */
export class ReadModel {
  private sports = new Map<number, Sport>();
  private sportsBody: Buffer | undefined;
  private events = new Map<number, Entry<Event>>();
  private eventsBySport = new Map<number, Set<number>>();
  /** Joined on first read after a change, only for sports and events that exist: asking for unknown IDs adds nothing. */
  private sortedBySport = new Map<number, Entry<Event>[]>();
  private eventsBody = new Map<number, Buffer>();
  private markets = new Map<string, Entry<Market>>();
  private marketsByEvent = new Map<number, Set<string>>();
  private marketsBody = new Map<number, Buffer>();
  private results = new Map<string, Entry<MarketResult>>();
  private nestedParent = new Map<string, string>();
  private generation = 0;

  /** Changes whenever anything REST answers may have changed. */
  get version(): number {
    return this.generation;
  }

  sportsJson(): Buffer {
    return (this.sportsBody ??= bytes('[' + [...this.sports.values()].sort((a, b) => a.si - b.si).map((s) => JSON.stringify(s)).join(',') + ']'));
  }

  /** The JSON array of a sport's events: kept bytes, or with `leagues` a string of only theirs (not kept). */
  eventsJson(si: number, leagues?: ReadonlySet<number>): Buffer | string {
    const eids = this.eventsBySport.get(si);
    if (!eids?.size) return EMPTY;
    let sorted = this.sortedBySport.get(si);
    if (!sorted) this.sortedBySport.set(si, (sorted = [...eids].map((eid) => this.events.get(eid)!).sort(byStartThenId)));
    if (leagues) return '[' + sorted.filter((e) => leagues.has(e.value.li)).map((e) => e.json).join(',') + ']';
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

  market(mid: string): Market | undefined {
    return this.markets.get(mid)?.value;
  }

  /** Every market of an event, nested player-race markets included. */
  eventMarkets(eid: number): string[] {
    const out: string[] = [];
    for (const mid of this.marketsByEvent.get(eid) ?? []) {
      out.push(mid);
      for (const n of this.markets.get(mid)?.value.m ?? []) out.push(n.mid);
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
    if (parent === undefined) return this.markets.get(mid)?.value.go ?? false;
    const p = this.markets.get(parent)?.value;
    return (p?.go ?? false) || (p?.m?.find((n) => n.mid === mid)?.go ?? false);
  }

  /** Whether a market, top-level or nested in a player-race, exists. */
  knows(mid: string): boolean {
    return this.markets.has(mid) || this.nestedParent.has(mid);
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

  /**
   * Replaces everything with what Postgres holds now, and says what changed
   * against what it replaced, so a full reload tells subscribers exactly what
   * a targeted refresh would have.
   */
  async loadAll(db: Queryable): Promise<ModelChange[]> {
    const [sports, events, markets, results, nested] = await Promise.all([
      loadSports(db), loadEvents(db), loadMarkets(db), loadResults(db), loadNestedParents(db),
    ]);
    const fresh = new ReadModel();
    for (const s of sports) fresh.sports.set(s.si, s);
    for (const e of events) fresh.putEvent(e);
    for (const m of markets) fresh.putMarket(m);
    for (const r of results) fresh.results.set(r.mid, entry(r));
    fresh.nestedParent = new Map(nested);
    const changes = [...diff('market', this.markets, fresh.markets), ...diff('result', this.results, fresh.results)];
    const next = this.generation + 1;
    Object.assign(this, fresh);
    this.generation = next;
    return changes;
  }

  /** Reloads the rows named by NOTIFY payloads (`event:42`, `market:1.5`...) and says what changed. */
  async refresh(db: Queryable, keys: Iterable<string>): Promise<ModelChange[]> {
    const changes: ModelChange[] = [];
    const ids = { sport: new Set<number>(), league: new Set<number>(), event: new Set<number>(), market: new Set<string>(), result: new Set<string>() };
    for (const key of keys) {
      const at = key.indexOf(':');
      const kind = key.slice(0, at);
      const id = key.slice(at + 1);
      if (kind === 'sport' || kind === 'league' || kind === 'event') ids[kind].add(Number(id));
      else if (kind === 'market' || kind === 'runner') ids.market.add(this.nestedParent.get(id) ?? id);
      else if (kind === 'result') ids.result.add(id);
    }
    if (ids.sport.size) await this.refreshSports(db, [...ids.sport]);
    if (ids.league.size) {
      // A league's name is its events' `le`.
      for (const e of await loadEvents(db, { lis: [...ids.league] })) ids.event.add(e.eid);
    }
    if (ids.event.size) await this.refreshEvents(db, [...ids.event], ids.market);
    if (ids.market.size) await this.refreshMarkets(db, [...ids.market], ids.result, changes);
    if (ids.result.size) {
      const mids = [...ids.result];
      const found = new Map((await loadResults(db, mids)).map((r) => [r.mid, r]));
      for (const mid of mids) {
        const before = this.results.get(mid)?.value;
        const after = found.get(mid);
        if (after) this.results.set(mid, entry(after));
        else this.results.delete(mid);
        changes.push({ kind: 'result', before, after });
      }
    }
    this.generation++;
    return changes;
  }

  private async refreshSports(db: Queryable, sis: number[]): Promise<void> {
    const found = new Map((await loadSports(db, sis)).map((s) => [s.si, s]));
    for (const si of sis) {
      const s = found.get(si);
      if (s) this.sports.set(si, s);
      else this.sports.delete(si);
    }
    this.sportsBody = undefined;
  }

  private async refreshEvents(db: Queryable, eids: number[], marketsToReload: Set<string>): Promise<void> {
    const found = new Map((await loadEvents(db, { eids })).map((e) => [e.eid, e]));
    for (const eid of eids) {
      const before = this.events.get(eid)?.value;
      const after = found.get(eid);
      if (before) this.dropEvent(before);
      if (after) this.putEvent(after);
      // Markets carry their event's sport, so a moved event moves its markets.
      if (before && after && before.si !== after.si) for (const mid of this.marketsByEvent.get(eid) ?? []) marketsToReload.add(mid);
    }
  }

  private async refreshMarkets(db: Queryable, mids: string[], resultsToReload: Set<string>, changes: ModelChange[]): Promise<void> {
    // Both reads first, then one synchronous swap: readers never see a nested market missing.
    const [markets, nested] = await Promise.all([loadMarkets(db, { mids }), loadNestedParents(db, mids)]);
    const found = new Map(markets.map((m) => [m.mid, m]));
    const reloading = new Set(mids);
    for (const [child, parent] of this.nestedParent) {
      if (!reloading.has(parent)) continue;
      this.nestedParent.delete(child);
      resultsToReload.add(child);
    }
    for (const [child, parent] of nested) {
      this.nestedParent.set(child, parent);
      resultsToReload.add(child);
    }
    for (const mid of mids) {
      const before = this.markets.get(mid)?.value;
      if (before) this.dropMarket(before);
      const after = found.get(mid);
      if (after) this.putMarket(after);
      resultsToReload.add(mid);
      changes.push({ kind: 'market', before, after });
    }
  }

  private putEvent(e: Event): void {
    this.events.set(e.eid, entry(e));
    addTo(this.eventsBySport, e.si, e.eid);
    this.sortedBySport.delete(e.si);
    this.eventsBody.delete(e.si);
  }

  private dropEvent(e: Event): void {
    this.events.delete(e.eid);
    this.eventsBySport.get(e.si)?.delete(e.eid);
    this.sortedBySport.delete(e.si);
    this.eventsBody.delete(e.si);
  }

  private putMarket(m: Market): void {
    this.markets.set(m.mid, entry(m));
    addTo(this.marketsByEvent, m.eid, m.mid);
    this.marketsBody.delete(m.eid);
  }

  private dropMarket(m: Market): void {
    this.markets.delete(m.mid);
    this.marketsByEvent.get(m.eid)?.delete(m.mid);
    this.marketsBody.delete(m.eid);
  }
}
