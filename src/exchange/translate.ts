/**
 * Betfair stream messages in, ingest items out. Shared by `npm run replay` (recorded files) and
 * the live stream client:
 *
 *   const translator = new Translator({ catalogue, ledger });   // both optional
 *   const { items, problems, images } = translator.translate(JSON.parse(line), 'file.bz2:12');
 *
 * or in two steps, as the adapters do (the live one to send only the newest state of a busy
 * market): `apply` updates the books and returns the reference items, each with the market whose
 * definition made it, and the markets whose state moved, in the order they must take effect;
 * `render(mid)` gives the item that tells the service a market's state now (an odds image, or a
 * `stale` item), or nothing when it was told already.
 *
 * Each market change updates that market's book (exchange-book.ts) and yields one odds image: the
 * best 10 levels a side per runner, `ltp` and `tv` per runner, the market's `tv`, `ts` = the
 * message's `pt`, and `late: true` while the exchange flags its data late (`status: 503`). A new
 * or changed definition first yields the sport, league, event and market rows it implies; a
 * market's close yields, after its last image, `go` and its `result`.
 *
 * One bad market never costs another: each change is checked on its own (check.ts). A change
 * that cannot be applied makes only its market's book unreliable: the market is sent as stale
 * (`unreliable`) and gets no image until a fresh one (`img: true`, a SUB_IMAGE). An image the
 * service's own price rules refuse (ingest/prices.ts) is kept back and the market sent as stale
 * instead, until its next image the rules accept. A lateness flag that comes without a change
 * marks every market stale (`late`); when it clears, each is sent its image again.
 */
import { checkPrices, pricingOf } from '../ingest/prices.js';
import { validateOdds } from '../ingest/validate-odds.js';
import { oddsItem, type OddsImage, type RunnerPrices } from '../odds/image.js';
import type { IngestItemInput, PublisherStaleReason, StaleIngestItem } from '../odds/messages.js';
import type { Catalogue } from './catalogue.js';
import { changeMid, checkChange, checkMessage } from './check.js';
import { ExchangeBook } from './exchange-book.js';
import type { Ledger } from './ledger.js';
import { listedRunners, marketStatus, marketType, runnerStatus } from './mapping.js';
import { changed, eventFields, marketFields, namesOf, ordered, Parents, withNames } from './reference.js';
import { resultOf, termsOf, withoutNulls } from './terms.js';
import type { MarketChange, MarketDefinition, RunnerDefinition } from './stream.js';

const IMAGE_DEPTH = 10;
/** Markets held at once; the one closed longest ago is forgotten first. */
const DEFAULT_MAX_MARKETS = 50_000;

/**
 * A reference item with the market whose definition made it (`mid`: a publisher keeps each
 * market's rows apart), or a market whose state the service must be told (`render` it).
 */
export type Step = { item: IngestItemInput; mid: string } | { mid: string };

interface TranslatorOptions {
  catalogue?: Catalogue;
  maxMarkets?: number;
  /** Where images kept back and changes not applied are counted by market. */
  ledger?: Ledger;
}

interface Applied {
  steps: Step[];
  /** Each bad message or market change, naming where and why. */
  problems: string[];
}

interface Translation {
  items: IngestItemInput[];
  problems: string[];
  /** Odds images among the items. */
  images: number;
}

type Fields = Record<string, unknown>;

/** What the service was last told of a market. */
type Told = 'nothing' | 'image' | 'late image' | PublisherStaleReason;

interface MarketState {
  def: MarketDefinition;
  /** The definition's runners in display order. */
  runners: RunnerDefinition[];
  /** Those the market's row lists (all but the unnamed price carrier of an exported line market): its pricing, terms and settlement are theirs. */
  listed: RunnerDefinition[];
  book: ExchangeBook;
  /** The market row as last sent; its terms, `go` and its result (as JSON) as last sent. */
  sent?: Fields;
  terms?: Fields;
  go: boolean;
  settled?: string;
  /** When the exchange published the newest change applied (its message's `pt`): the image's source time. */
  exchangeTime: number;
  /** The book or definition moved since the service was last sent an image. */
  moved: boolean;
  told: Told;
  /** Why the book cannot be trusted until a fresh image; undefined while it can. */
  broken: string | undefined;
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
  /** The exchange flags its data late (`status` 503). */
  private late = false;
  /** Markets that have had a definition, counted once each. */
  marketsSeen = 0;
  /** Messages skipped as carrying no market data, by op. */
  readonly skipped = new Map<string, number>();

  constructor(private readonly opts: TranslatorOptions = {}) {
    this.maxMarkets = opts.maxMarkets ?? DEFAULT_MAX_MARKETS;
  }

  /** The exchange's data is flagged late. */
  get isLate(): boolean {
    return this.late;
  }

  /** Markets whose books wait for a fresh image, with why. */
  unreliable(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [mid, s] of this.markets) if (s.broken !== undefined) out.set(mid, s.broken);
    return out;
  }

  /** Applies one message and renders what it moved at once: every image in the order the exchange published it. */
  translate(raw: unknown, where: string): Translation {
    const { steps, problems } = this.apply(raw, where);
    const items: IngestItemInput[] = [];
    let images = 0;
    for (const step of steps) {
      const item = 'item' in step ? step.item : this.render(step.mid);
      if (!item) continue;
      items.push(item);
      if (item.kind === 'odds') images++;
    }
    return { items, problems, images };
  }

  apply(raw: unknown, where: string): Applied {
    const checked = checkMessage(raw);
    if ('error' in checked) return { steps: [], problems: [`${where}: ${checked.error}`] };
    if ('skip' in checked) {
      this.skipped.set(checked.skip, (this.skipped.get(checked.skip) ?? 0) + 1);
      return { steps: [], problems: [] };
    }
    const msg = checked.message;
    const steps: Step[] = [];
    const problems: string[] = [];
    const fresh = msg.ct === 'SUB_IMAGE';
    for (const [i, raw] of msg.mc.entries()) {
      const bad = checkChange(raw, `mc[${i}]`);
      if (bad) {
        this.unapplied(changeMid(raw), `${where}: ${bad}`, steps, problems);
        continue;
      }
      const mc = raw as MarketChange;
      const problem = this.admit(mc);
      if (problem) {
        this.unapplied(mc.id, `${where}: ${problem}`, steps, problems);
        continue;
      }
      const state = this.update(mc, fresh || mc.img === true, msg.pt);
      const before: IngestItemInput[] = [];
      const after: IngestItemInput[] = [];
      if (mc.marketDefinition) this.reference(mc.id, state, before, after);
      for (const item of before) steps.push({ item, mid: mc.id });
      steps.push({ mid: mc.id });
      for (const item of after) steps.push({ item, mid: mc.id });
    }
    // Late or well again: every market hears it, those this message changed already with their image.
    const late = msg.status !== undefined && msg.status !== null;
    if (late !== this.late) {
      this.late = late;
      for (const [mid, s] of this.markets) if (!s.go) steps.push({ mid });
    }
    return { steps, problems };
  }

  /**
   * What tells the service the market's state now: its image; `stale` when its book is
   * unreliable, its image breaks the service's price rules, or the data is late with no new
   * image; undefined when the service was told that already.
   */
  render(mid: string): IngestItemInput | undefined {
    const s = this.markets.get(mid);
    if (!s) return undefined;
    if (s.broken !== undefined) return this.stale(mid, s, 'unreliable');
    if (!s.moved) {
      // Nothing new in the book: only the lateness may have changed.
      if (this.late && s.told === 'image') return this.stale(mid, s, 'late');
      if (this.late || (s.told !== 'late' && s.told !== 'late image')) return undefined;
    }
    s.moved = false;
    const item = oddsItem(this.image(mid, s), this.late);
    const refusal = this.refusal(item, s);
    if (refusal) {
      this.opts.ledger?.record(mid, 'withheld', refusal);
      return this.stale(mid, s, 'unreliable');
    }
    s.told = this.late ? 'late image' : 'image';
    return item;
  }

  private stale(mid: string, s: MarketState, why: PublisherStaleReason): StaleIngestItem | undefined {
    if (s.told === why) return undefined;
    s.told = why;
    return { kind: 'stale', mid, why };
  }

  /** Why the service would refuse this image (its shape and price rules), naming the field; undefined when it would take it. */
  private refusal(item: IngestItemInput, s: MarketState): string | undefined {
    const checked = validateOdds(item);
    if ('error' in checked) return checked.error;
    return checkPrices(checked.image, pricingOf(marketType(s.def), s.listed.length > 0));
  }

  /** A change that cannot be applied: its market, when known, is unreliable until a fresh image. */
  private unapplied(mid: string | undefined, why: string, steps: Step[], problems: string[]): void {
    problems.push(why);
    if (mid === undefined) return;
    this.opts.ledger?.record(mid, 'unapplied', why);
    const s = this.markets.get(mid);
    if (!s || s.broken !== undefined) return;
    s.broken = why;
    steps.push({ mid });
  }

  /** Why this change cannot be taken (a market never defined, no room for a new one); undefined when it can. */
  private admit(mc: MarketChange): string | undefined {
    const known = this.markets.get(mc.id)?.def;
    const def = mc.marketDefinition;
    // The service keeps a market's event and type for life and refuses a batch that changes either.
    if (known && def && (def.eventId !== known.eventId || marketType(def) !== marketType(known))) {
      return `market ${mc.id}'s definition moves it from event ${known.eventId} (${marketType(known)}) to event ${def.eventId} (${marketType(def)}); a market keeps its event and type, so the change is not applied`;
    }
    if (known) return undefined;
    if (!mc.marketDefinition) return `market ${mc.id} has no definition yet`;
    if (this.markets.size < this.maxMarkets) return undefined;
    const oldest = this.closed.values().next();
    if (oldest.done) return `more than ${this.maxMarkets} markets are open at once`;
    this.forget(oldest.value);
    return undefined;
  }

  private update(mc: MarketChange, fresh: boolean, exchangeTime: number): MarketState {
    let state = this.markets.get(mc.id);
    if (!state) {
      state = { def: mc.marketDefinition!, runners: [], listed: [], book: new ExchangeBook(), go: false, exchangeTime, moved: true, told: 'nothing', broken: undefined };
      this.markets.set(mc.id, state);
      this.marketsSeen++;
    }
    if (mc.marketDefinition) this.define(mc.id, state, mc.marketDefinition);
    if (fresh) state.broken = undefined;
    state.book.apply(mc, fresh);
    state.exchangeTime = exchangeTime;
    state.moved = true;
    return state;
  }

  private define(mid: string, state: MarketState, def: MarketDefinition): void {
    const eid = Number(def.eventId);
    if (state.def.eventId !== def.eventId) this.events.get(Number(state.def.eventId))?.markets.delete(mid);
    state.def = withNames(state.def, def);
    state.runners = ordered(state.def);
    state.listed = listedRunners(state.def, state.runners);
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
    const termsNow = termsOf(mid, def, state.listed);
    const termsDelta = state.terms ? changed(state.terms, termsNow) : withoutNulls(termsNow);
    if (termsDelta) before.push({ kind: 'terms', mid, ...termsDelta });
    state.terms = termsNow;
    if (state.go && !closing) {
      // Reopened after it settled: the settlement is rolled back until it settles again.
      before.push({ kind: 'market', mid, go: false });
      if (state.settled) before.push({ kind: 'result', mid, rt: true });
      state.settled = undefined;
    }
    if (!state.go && closing) after.push({ kind: 'market', mid, go: true });
    state.go = closing;
    if (closing) this.settle(mid, state, after);
  }

  /** A closed market's result, when it says something (winners, or void) it has not said yet: settled again when they change. */
  private settle(mid: string, state: MarketState, after: IngestItemInput[]): void {
    const result = resultOf(mid, state.def, state.listed);
    const json = JSON.stringify(result);
    if ((result.res || result.ia) && json !== state.settled) {
      after.push(result as IngestItemInput);
      state.settled = json;
    }
  }

  private image(mid: string, state: MarketState): OddsImage {
    const { def, book } = state;
    // A line market's ladders run the other way: its best Yes is its lowest line, its best No its highest.
    const lines = pricingOf(marketType(def), state.listed.length > 0) === 'line';
    const runners = state.runners.map((runner) => {
      const out: RunnerPrices = { runnerId: runner.id, status: runnerStatus(runner.status), back: book.back(runner.id, IMAGE_DEPTH, lines), lay: book.lay(runner.id, IMAGE_DEPTH, lines) };
      const lastTraded = book.lastTraded(runner.id);
      const tradedVolume = book.tradedVolume(runner.id);
      if (lastTraded !== undefined) out.lastTraded = lastTraded;
      if (tradedVolume !== undefined) out.tradedVolume = tradedVolume;
      return out;
    });
    const image: OddsImage = { marketId: mid, sourceTime: state.exchangeTime, status: marketStatus(def.status), inPlay: def.inPlay, runners };
    const tradedVolume = book.marketTradedVolume();
    if (tradedVolume !== undefined) image.tradedVolume = tradedVolume;
    return image;
  }
}
