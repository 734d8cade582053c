import type pg from 'pg';
import { loadEvents, loadMarkets, loadNestedParents, loadResults, loadSports } from './queries.js';
import type { Event, Market, MarketResult, Sport } from './types.js';
import { Collections, resultEntry, type Entry } from './collections.js';

type Queryable = Pick<pg.Pool, 'query'>;

/** What a refresh changed, for the frames subscribers get. Absent `after` means deleted. */
export type ModelChange =
  | { kind: 'market'; before?: Market; after?: Market }
  | { kind: 'result'; before?: MarketResult; after?: MarketResult };

/** Rows of one kind as Postgres has them, by the ids asked for: an id not found was deleted. */
interface Found<K, V> {
  ids: K[];
  found: Map<K, V>;
}

/** Markets as readMarkets found them in Postgres, for applyMarkets to swap in. */
interface MarketsRead {
  mids: string[];
  found: Map<string, Market>;
  nested: Awaited<ReturnType<typeof loadNestedParents>>;
}

const withNested = (m: Market | undefined): string[] => (m ? [m.id, ...(m.nested ?? []).map((n) => n.id)] : []);

/** Markets (nested ones too) the changes removed from the model. */
export function goneMarkets(changes: readonly ModelChange[]): string[] {
  const gone: string[] = [];
  for (const c of changes) {
    if (c.kind !== 'market' || !c.before) continue;
    const kept = new Set(withNested(c.after));
    for (const mid of withNested(c.before)) if (!kept.has(mid)) gone.push(mid);
  }
  return gone;
}

/** One kind of element by ID: a Map, or the results' TextTable. */
type Entries<T> = Pick<ReadonlyMap<string, Entry<T>>, 'get' | 'has'> & Iterable<[string, Entry<T>]>;

/** What differs between two generations of one kind of element, by their serialised (REST) form. */
function diff<T>(kind: ModelChange['kind'], before: Entries<T>, after: Entries<T>): ModelChange[] {
  const out: ModelChange[] = [];
  for (const [id, e] of after) {
    const old = before.get(id);
    if (!old || old.json !== e.json || old.more !== e.more) out.push({ kind, before: old?.value, after: e.value } as ModelChange);
  }
  for (const [id, old] of before) if (!after.has(id)) out.push({ kind, before: old.value } as ModelChange);
  return out;
}

/**
 * The read model, kept equal to Postgres: loaded whole (at start, and after
 * the LISTEN connection was away) or refreshed row by row after NOTIFY, each
 * time saying what changed so subscribers can be told.
 */
export class ReadModel extends Collections {
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
    for (const s of sports) fresh.sports.set(s.id, s);
    for (const e of events) fresh.putEvent(e);
    for (const m of markets) fresh.putMarket(m);
    for (const r of results) fresh.results.set(r.marketId, resultEntry(r));
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
    const sports = ids.sport.size ? await this.readSports(db, [...ids.sport]) : undefined;
    if (ids.league.size) {
      // A league's name is its events' leagueName.
      for (const e of await loadEvents(db, { lis: [...ids.league] })) ids.event.add(e.id);
    }
    const events = ids.event.size ? await this.readEvents(db, [...ids.event], ids.market) : undefined;
    const markets = ids.market.size ? await this.readMarkets(db, [...ids.market], ids.result) : undefined;
    const results = ids.result.size ? new Map((await loadResults(db, [...ids.result])).map((r) => [r.marketId, r])) : undefined;
    // Everything is read first and swapped in one synchronous step: no reader sees an event gone
    // while its markets are listed, or a market gone while its result is, states Postgres never had.
    if (sports) this.applySports(sports);
    if (events) this.applyEvents(events);
    if (markets) this.applyMarkets(markets, changes);
    if (results) this.applyResults([...ids.result], results, changes);
    this.generation++;
    return changes;
  }

  private applyResults(mids: readonly string[], found: ReadonlyMap<string, MarketResult>, changes: ModelChange[]): void {
    for (const mid of mids) {
      const before = this.results.get(mid)?.value;
      const after = found.get(mid);
      if (after) this.results.set(mid, resultEntry(after));
      else this.results.delete(mid);
      // A market without a result before or after (a nested market gone with its parent's type) changed nothing here.
      if (before || after) changes.push({ kind: 'result', before, after });
    }
  }

  private async readSports(db: Queryable, sis: number[]): Promise<Found<number, Sport>> {
    return { ids: sis, found: new Map((await loadSports(db, sis)).map((s) => [s.id, s])) };
  }

  private applySports({ ids, found }: Found<number, Sport>): void {
    for (const si of ids) {
      const s = found.get(si);
      if (s) this.sports.set(si, s);
      else this.sports.delete(si);
    }
    this.sportsBody = undefined;
  }

  /** The events' rows as Postgres has them; the markets of an event that moved sport added to `marketsToReload`. */
  private async readEvents(db: Queryable, eids: number[], marketsToReload: Set<string>): Promise<Found<number, Event>> {
    const found = new Map((await loadEvents(db, { eids })).map((e) => [e.id, e]));
    for (const eid of eids) {
      const before = this.events.get(eid)?.value;
      const after = found.get(eid);
      // Markets carry their event's sport, so a moved event moves its markets.
      if (before && after && before.sportId !== after.sportId) for (const mid of this.marketsByEvent.get(eid) ?? []) marketsToReload.add(mid);
    }
    return { ids: eids, found };
  }

  private applyEvents({ ids, found }: Found<number, Event>): void {
    for (const eid of ids) {
      const before = this.events.get(eid)?.value;
      const after = found.get(eid);
      if (before) this.dropEvent(before);
      if (after) this.putEvent(after);
    }
  }

  /** The markets' rows and nested parents as Postgres has them, and every result they touch added to `resultsToReload`. */
  private async readMarkets(db: Queryable, mids: string[], resultsToReload: Set<string>): Promise<MarketsRead> {
    const [markets, nested] = await Promise.all([loadMarkets(db, { mids }), loadNestedParents(db, mids)]);
    const reloading = new Set(mids);
    for (const [child, parent] of this.nestedParent) if (reloading.has(parent)) resultsToReload.add(child);
    for (const [child] of nested) resultsToReload.add(child);
    for (const mid of mids) resultsToReload.add(mid);
    return { mids, found: new Map(markets.map((m) => [m.id, m])), nested };
  }

  /** One synchronous swap: readers never see a nested market missing. */
  private applyMarkets({ mids, found, nested }: MarketsRead, changes: ModelChange[]): void {
    const reloading = new Set(mids);
    for (const [child, parent] of this.nestedParent) if (reloading.has(parent)) this.nestedParent.delete(child);
    for (const [child, parent] of nested) this.nestedParent.set(child, parent);
    for (const mid of mids) {
      const before = this.markets.get(mid)?.value;
      if (before) this.dropMarket(before);
      const after = found.get(mid);
      if (after) this.putMarket(after);
      if (before || after) changes.push({ kind: 'market', before, after });
    }
  }
}
