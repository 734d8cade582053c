import type { IngestItemInput } from '../odds/messages.js';
import type { Catalogue } from './catalogue.js';
import { defaultLeague, listedRunners, marketType, ownType, sportName, typeName } from './mapping.js';
import type { MarketDefinition } from './stream.js';

/**
 * The reference rows a market definition implies (sport, league, event, market), each as the
 * whole item the first time and afterwards only the keys that changed, so a replay sends a
 * definition's rows once and then just the moves (a suspension, going in play).
 */
type Fields = Record<string, unknown>;

/** The keys of `next` whose values differ from `prev` (compared as JSON: runner lists are arrays). */
export function changed(prev: Fields | undefined, next: Fields): Fields | undefined {
  if (!prev) return next;
  const out: Fields = {};
  for (const [k, v] of Object.entries(next)) if (JSON.stringify(prev[k]) !== JSON.stringify(v)) out[k] = v;
  return Object.keys(out).length ? out : undefined;
}

interface Names {
  sport: string;
  league: { li: number; na: string };
  event: string;
  market: string;
  runner: (id: number) => string;
}

/** Names from the definition, then the catalogue, then the fallbacks docs/exchange.md states. */
export function namesOf(mid: string, def: MarketDefinition, catalogue: Catalogue | undefined): Names {
  const si = Number(def.eventTypeId);
  const cat = catalogue?.market(mid);
  const byId = new Map(def.runners.filter((r) => r.name).map((r) => [r.id, r.name!]));
  return {
    sport: catalogue?.sportName(si) ?? sportName(si),
    league: cat?.competition ?? defaultLeague(si),
    event: def.eventName ?? cat?.eventName ?? `Event ${def.eventId}`,
    market: def.name ?? cat?.marketName ?? typeName(def.marketType),
    runner: (id) => byId.get(id) ?? cat?.runners.get(id) ?? `Selection ${id}`,
  };
}

/**
 * The stream sends names in some definitions only (historic files carry them, the live stream
 * never does): a definition without them keeps the names the market's earlier one gave.
 */
export function withNames(prev: MarketDefinition | undefined, next: MarketDefinition): MarketDefinition {
  if (!prev) return next;
  const known = new Map(prev.runners.filter((r) => r.name).map((r) => [r.id, r.name]));
  return {
    ...next,
    name: next.name ?? prev.name,
    eventName: next.eventName ?? prev.eventName,
    runners: next.runners.map((r) => (r.name || !known.has(r.id) ? r : { ...r, name: known.get(r.id) })),
  };
}

/** Runners in the exchange's display order. */
export const ordered = (def: MarketDefinition) =>
  def.runners.map((r, i) => ({ r, i })).sort((a, b) => (a.r.sortPriority ?? 0) - (b.r.sortPriority ?? 0) || a.i - b.i).map((x) => x.r);

/** A market's row, less `go`, which the translator sends apart so the last image goes first; without `r` when it lists no runners of its own. */
export function marketFields(mid: string, def: MarketDefinition, names: Names): Fields {
  const listed = listedRunners(def, ordered(def));
  return {
    mid, eid: Number(def.eventId), na: names.market, si: Number(def.eventTypeId), ty: marketType(def),
    s: def.status === 'OPEN', rt: false, ...(listed.length || !ownType(def) ? { r: listed.map((r) => ({ rid: r.id, na: names.runner(r.id) })) } : {}),
  };
}

export function eventFields(def: MarketDefinition, names: Names, state: { ip: boolean; go: boolean }): Fields {
  return {
    eid: Number(def.eventId), na: names.event, le: names.league.na, st: new Date(def.openDate).toISOString(),
    go: state.go, ip: state.ip, si: Number(def.eventTypeId), li: names.league.li, tv: null,
  };
}

/** Sport and league rows, once each per translator. */
export class Parents {
  private sports = new Set<number>();
  private leagues = new Set<number>();

  items(def: MarketDefinition, names: Names): IngestItemInput[] {
    const si = Number(def.eventTypeId);
    const out: IngestItemInput[] = [];
    if (!this.sports.has(si)) {
      this.sports.add(si);
      out.push({ kind: 'sport', si, na: names.sport, a: true });
    }
    if (!this.leagues.has(names.league.li)) {
      this.leagues.add(names.league.li);
      out.push({ kind: 'league', li: names.league.li, si, na: names.league.na });
    }
    return out;
  }
}
