import type { BookEntry } from '../odds/book.js';
import type { Variant } from './variant.js';
import { passes, type Narrowing } from './narrowing.js';
import type { MarketFacts } from '../refdata/types.js';

/**
 * What a uWS topic has carried, for the socket on it: every socket on the topic was sent these
 * bytes while it was on it, so a socket knows what it was sent without a count per delivery.
 * Written by the broadcaster alone, as it publishes.
 */
export interface Carried {
  bytes: number;
}

/**
 * One variant of a market in the index, and how many subscribers have it. The object lives exactly
 * as long as someone has the variant, so what hangs on it cannot outgrow the subscriptions.
 */
export interface IndexedVariant {
  readonly variant: Variant;
  readonly count: number;
  /** Its topic, as the broadcaster writes it: the bytes it carried, and for conflated deltas the image its sockets hold. */
  readonly topic: Carried & { base: BookEntry | undefined };
}

/** A market's entry as others see it: only subscribers change who has a market, through the index. */
export interface MarketEntry<S> {
  readonly subscribers: ReadonlySet<S>;
  readonly variants: ReadonlyMap<string, IndexedVariant>;
}

interface IndexEntry<S> {
  readonly subscribers: Set<S>;
  readonly variants: Map<string, { readonly variant: Variant; count: number; readonly topic: Carried & { base: BookEntry | undefined } }>;
}

/** Filters that also take markets created later: on an event or on a sport. */
export type FilterKind = 'events' | 'sports';

/**
 * Who has each market, and whose filters cover each event and sport: an index derived from the
 * subscribers, each of which writes its own entries through `add`, `drop` and `filter` as its
 * subscriptions change, and removes them all when it closes. Nobody else writes it; the
 * broadcaster reads it to know which topics to publish to. The subscriber's type is a parameter
 * (the service's is `MarketIndex<Subscriber>`), so the subscriber knows the index without the
 * index knowing it back.
 */
export class MarketIndex<S> {
  private readonly markets = new Map<string, IndexEntry<S>>();
  /** Each filter's variant, and its narrowing (undefined: every market of its event or sport). */
  private readonly filters: Record<FilterKind, Map<number, Map<S, { v: Variant; narrowing: Narrowing | undefined }>>> = { events: new Map(), sports: new Map() };

  /** `s` subscribed to `mid` as `v`: its variant's entry, made on the first to have it. */
  add(s: S, mid: string, v: Variant): IndexedVariant {
    let m = this.markets.get(mid);
    if (!m) this.markets.set(mid, (m = { subscribers: new Set(), variants: new Map() }));
    m.subscribers.add(s);
    let indexed = m.variants.get(v.key);
    if (indexed) indexed.count++;
    else m.variants.set(v.key, (indexed = { variant: v, count: 1, topic: { bytes: 0, base: undefined } }));
    return indexed;
  }

  /** `s` no longer has `mid` as `v`. */
  drop(s: S, mid: string, v: Variant): void {
    const m = this.markets.get(mid);
    if (!m) return;
    m.subscribers.delete(s);
    const indexed = m.variants.get(v.key);
    if (indexed && --indexed.count === 0) m.variants.delete(v.key);
    if (m.subscribers.size === 0) this.markets.delete(mid);
  }

  market(mid: string): MarketEntry<S> | undefined {
    return this.markets.get(mid);
  }

  /** Sets (or, with no variant, removes) `s`'s filter on an event or sport, narrowed to some of its markets or not. */
  filter(s: S, kind: FilterKind, id: number, v: Variant | undefined, narrowing?: Narrowing): void {
    const index = this.filters[kind];
    let set = index.get(id);
    if (v) {
      if (!set) index.set(id, (set = new Map()));
      set.set(s, { v, narrowing });
    } else {
      set?.delete(s);
      if (set?.size === 0) index.delete(id);
    }
  }

  /**
   * Subscribers whose filters cover a market of this event and sport with these facts, with the
   * variant each asked for (an event filter over a sport's).
   */
  filtered(eid: number, si: number, facts: MarketFacts): Map<S, Variant> {
    const out = new Map<S, Variant>();
    for (const [s, f] of this.filters.sports.get(si) ?? []) if (passes(f.narrowing, facts)) out.set(s, f.v);
    for (const [s, f] of this.filters.events.get(eid) ?? []) if (passes(f.narrowing, facts)) out.set(s, f.v);
    return out;
  }

  /** Market subscriptions held by open sockets. */
  subscriptions(): number {
    let n = 0;
    for (const m of this.markets.values()) n += m.subscribers.size;
    return n;
  }
}
