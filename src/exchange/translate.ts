/**
 * Betfair stream messages in, ingest items out. Shared by `npm run replay` (recorded files) and
 * the live stream client:
 *
 *   const translator = new Translator({ catalogue });        // catalogue optional
 *   const { items, errors, images } = translator.apply(JSON.parse(line), 'file.bz2:12');
 *
 * Each market change updates that market's book (exchange-book.ts) and yields one odds image: the
 * best 10 levels a side per runner, `ltp` and `tv` per runner, the market's `tv`, `ts` = the
 * message's `pt`. A new or changed definition first yields the sport, league, event and market
 * rows it implies; a market's close yields, after its last image, `go` and its `result`. Items
 * come in the order they must take effect. A bad message (see check.ts, or a change for a market
 * whose definition has not come yet) yields errors naming `where` and nothing else: the
 * translator's state is as if the message never came.
 */
import type { IngestItemInput } from '../odds/messages.js';
import type { Catalogue } from './catalogue.js';
import { checkMessage } from './check.js';
import { marketStatus, runnerStatus, winners } from './mapping.js';
import { ExchangeBook } from './exchange-book.js';
import { changed, eventFields, marketFields, namesOf, ordered, Parents, withNames } from './reference.js';
import type { MarketChange, MarketChangeMessage, MarketDefinition, RunnerDefinition } from './stream.js';

const IMAGE_DEPTH = 10;
/** Markets held at once; the one closed longest ago is forgotten first. */
const DEFAULT_MAX_MARKETS = 50_000;

interface TranslatorOptions {
  catalogue?: Catalogue;
  maxMarkets?: number;
}

interface Translation {
  items: IngestItemInput[];
  errors: string[];
  /** Odds images among the items. */
  images: number;
}

type Fields = Record<string, unknown>;

interface MarketState {
  def: MarketDefinition;
  /** The definition's runners in display order. */
  runners: RunnerDefinition[];
  book: ExchangeBook;
  /** The market row as last sent; `go` and `res` as last sent. */
  sent?: Fields;
  go: boolean;
  res: string;
}

interface EventState {
  markets: Set<string>;
  sent?: Fields;
}

export class Translator {
  private readonly markets = new Map<string, MarketState>();
  /** Closed markets, closed longest ago first. */
  private readonly closed = new Set<string>();
  private readonly events = new Map<number, EventState>();
  private readonly parents = new Parents();
  private readonly maxMarkets: number;
  /** Markets that have had a definition, counted once each. */
  marketsSeen = 0;

  constructor(private readonly opts: TranslatorOptions = {}) {
    this.maxMarkets = opts.maxMarkets ?? DEFAULT_MAX_MARKETS;
  }

  apply(raw: unknown, where: string): Translation {
    const checked = checkMessage(raw);
    if ('error' in checked) return refused(where, checked.error);
    const msg = checked.message;
    if (!msg?.mc?.length) return { items: [], errors: [], images: 0 };
    const problem = this.admissible(msg.mc);
    if (problem) return refused(where, problem);
    this.makeRoom(msg.mc);
    const before: IngestItemInput[] = [];
    const images: IngestItemInput[] = [];
    const after: IngestItemInput[] = [];
    for (const mc of msg.mc) {
      const state = this.update(mc);
      if (mc.marketDefinition) this.reference(mc.id, state, before, after);
      images.push(this.image(mc.id, state, msg));
    }
    return { items: [...before, ...images, ...after], errors: [], images: images.length };
  }

  /** Why the message cannot be applied whole, before any of it is. */
  private admissible(changes: MarketChange[]): string | undefined {
    for (const mc of changes) {
      const def = mc.marketDefinition;
      if (!def && !this.markets.has(mc.id)) return `market ${mc.id} has no definition yet`;
      if (def && new Set(def.runners.map((r) => r.id)).size !== def.runners.length) {
        return `market ${mc.id} repeats a selection ID (handicap lines), which the service cannot carry`;
      }
    }
    const fresh = new Set(changes.map((mc) => mc.id).filter((m) => !this.markets.has(m)));
    if (this.markets.size + fresh.size <= this.maxMarkets) return undefined;
    const forgettable = [...this.closed].filter((m) => !changes.some((mc) => mc.id === m)).length;
    return this.markets.size - forgettable + fresh.size > this.maxMarkets ? `more than ${this.maxMarkets} markets are open at once` : undefined;
  }

  /** Forgets the markets closed longest ago (never one this message changes) to make room for its new ones. */
  private makeRoom(changes: MarketChange[]): void {
    const mids = new Set(changes.map((mc) => mc.id));
    let over = this.markets.size + [...mids].filter((m) => !this.markets.has(m)).length - this.maxMarkets;
    for (const mid of this.closed) {
      if (over <= 0) break;
      if (mids.has(mid)) continue;
      this.forget(mid);
      over--;
    }
  }

  private update(mc: MarketChange): MarketState {
    let state = this.markets.get(mc.id);
    if (!state) {
      state = { def: mc.marketDefinition!, runners: [], book: new ExchangeBook(), go: false, res: '' };
      this.markets.set(mc.id, state);
      this.marketsSeen++;
    }
    if (mc.marketDefinition) this.define(mc.id, state, mc.marketDefinition);
    state.book.apply(mc);
    return state;
  }

  private define(mid: string, state: MarketState, def: MarketDefinition): void {
    const eid = Number(def.eventId);
    if (state.def.eventId !== def.eventId) this.events.get(Number(state.def.eventId))?.markets.delete(mid);
    state.def = withNames(state.def, def);
    state.runners = ordered(state.def);
    let event = this.events.get(eid);
    if (!event) this.events.set(eid, (event = { markets: new Set() }));
    event.markets.add(mid);
    this.closed.delete(mid);
    if (def.status === 'CLOSED') this.closed.add(mid);
  }

  private forget(mid: string): void {
    const eid = Number(this.markets.get(mid)!.def.eventId);
    const event = this.events.get(eid)!;
    event.markets.delete(mid);
    if (!event.markets.size) this.events.delete(eid);
    this.closed.delete(mid);
    this.markets.delete(mid);
  }

  /** Rows before the image (creation, moves) and after it (the close: `go`, result, the event's end). */
  private reference(mid: string, state: MarketState, before: IngestItemInput[], after: IngestItemInput[]): void {
    const { def } = state;
    const names = namesOf(mid, def, this.opts.catalogue);
    before.push(...this.parents.items(def, names));
    const closing = def.status === 'CLOSED';
    const event = this.events.get(Number(def.eventId))!;
    const open = [...event.markets].map((m) => this.markets.get(m)!.def).filter((d) => d.status !== 'CLOSED');
    const eventNow = eventFields(def, names, { ip: open.some((d) => d.inPlay), go: open.length === 0 });
    const eventDelta = changed(event.sent, eventNow);
    if (eventDelta) (event.sent && closing ? after : before).push({ kind: 'event', eid: eventNow.eid, ...eventDelta });
    event.sent = eventNow;
    const marketNow = marketFields(mid, def, names);
    const marketDelta = changed(state.sent, marketNow);
    if (marketDelta) before.push({ kind: 'market', mid, ...marketDelta, ...(state.sent ? {} : { go: false }) });
    state.sent = marketNow;
    if (state.go && !closing) before.push({ kind: 'market', mid, go: false });
    if (!state.go && closing) after.push({ kind: 'market', mid, go: true });
    state.go = closing;
    const res = closing ? winners(def) : '';
    if (res && res !== state.res) after.push({ kind: 'result', mid, res, rt: false, ia: false });
    if (res) state.res = res;
  }

  private image(mid: string, state: MarketState, msg: MarketChangeMessage): IngestItemInput {
    const { def, book } = state;
    const r = state.runners.map((runner) => {
      const ltp = book.ltp(runner.id);
      const tv = book.tv(runner.id);
      return {
        rid: runner.id, st: runnerStatus(runner.status), b: book.back(runner.id, IMAGE_DEPTH), l: book.lay(runner.id, IMAGE_DEPTH),
        ...(ltp === undefined ? {} : { ltp }), ...(tv === undefined ? {} : { tv }),
      };
    });
    const tv = book.totalTv();
    return { kind: 'odds', mid, ts: msg.pt, st: marketStatus(def.status), ip: def.inPlay, r, ...(tv === undefined ? {} : { tv }) };
  }
}

const refused = (where: string, why: string): Translation => ({ items: [], errors: [`${where}: ${why}`], images: 0 });
