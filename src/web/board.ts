import type { MarketBook, ReceiptDelay } from '../client/index.js';
import type { MarketStateMessage, OddsMessage, ResultMessage, WireTerms } from '../odds/messages.js';
import type { WireMarket as Market, WireResult as MarketResult, WireRunner as Runner } from '../refdata/wire.js';
import type { MarketFreshness } from '../client/freshness.js';
import { h } from './dom.js';
import { BookView } from './ladder.js';
import { resultText, type Results } from './results.js';
import type { Delay } from './delay.js';

/** A market on screen: its header and its books (one, or one per head-to-head of a player race). */
interface Card {
  el: HTMLElement;
  books: BookView[];
}

/** What a result is shown with: the market's name, and a runner's name for a runner ID. */
interface Known {
  name: string;
  runner: (res: string) => string;
}

const label = (ty: string) => ty.replace(/-/g, ' ');
const versus = (runners: readonly Runner[]) => runners.map((r) => r.na).join(' v ');
const naming = (runners: readonly Runner[] | undefined) => (res: string) => runners?.find((r) => String(r.rid) === res)?.na ?? res;

/**
 * The markets of the chosen event. Frames are held per market until the next
 * animation frame, so a market updated several times between two paints is
 * drawn once, and only its changed cells are touched; nothing is drawn while
 * the tab is hidden, and what waits is at most one frame per market.
 */
export class Board {
  private readonly cards = new Map<string, Card>();
  private readonly books = new Map<string, { book: BookView; card: Card }>();
  /** The newest frame of each market not drawn yet, how late it arrived, and whether it is a live update (timed for the header's delay). */
  private readonly pending = new Map<string, { frame: OddsMessage; delay: ReceiptDelay | undefined; live: boolean }>();
  private readonly known = new Map<string, Known>();
  /** Markets dropped from this event's board: never added again, even by a list read before they went. */
  private readonly gone = new Set<string>();
  /** `s` of markets heard before the list that draws them: newer than, or the same as, what that list says. */
  private readonly early = new Map<string, boolean>();
  private scheduled = false;
  /** Whether the event's market list has been read: before that, every market is unknown. */
  private loaded = false;
  /** What stands in for the markets while there are none to show: loading, or none open. */
  private note: HTMLElement | undefined;

  constructor(
    private readonly root: HTMLElement,
    private readonly results: Results,
    private readonly delay: Delay,
    /** A frame of a market the board does not list: a market created since the list was read. */
    private readonly unknown: (mid: string) => void,
  ) {
    this.say('Loading markets…');
  }

  /** Empties the board; `loading`: an event's markets are being read, and the board says so until they are. */
  clear(loading = true): void {
    this.cards.clear();
    this.books.clear();
    this.pending.clear();
    this.known.clear();
    this.gone.clear();
    this.early.clear();
    this.loaded = false;
    this.root.replaceChildren();
    this.note = undefined;
    this.results.clear();
    if (loading) this.say('Loading markets…');
  }

  /** The line in place of the markets (`aria-busy` while loading), or none once there are markets to show. */
  private say(text: string | undefined): void {
    this.note?.remove();
    this.note = text === undefined ? undefined : h('p', { class: 'empty note' }, text);
    if (this.note) this.root.prepend(this.note);
    this.root.setAttribute('aria-busy', String(text?.startsWith('Loading') ?? false));
  }

  /**
   * Adds the live markets of the list not yet on screen, each drawn at once
   * from what the client's book holds (prices and freshness), and learns every
   * market's name for results (a market's result may come after it left the screen).
   */
  sync(markets: Market[], held: Pick<MarketBook, 'get' | 'delay'> | undefined, fresh: (mid: string) => MarketFreshness, terms: (mid: string) => WireTerms | undefined = () => undefined): void {
    this.loaded = true;
    const live = new Set<string>();
    for (const m of markets) {
      this.learn(m);
      if (m.go || this.gone.has(m.mid)) continue;
      const books = m.m ? m.m.filter((n) => !n.go).map((n) => ({ mid: n.mid, r: n.r, s: n.s, title: versus(n.r) })) : [{ mid: m.mid, r: m.r, s: m.s, title: undefined }];
      let card = this.cards.get(m.mid);
      if (!card && !books.some((b) => !this.gone.has(b.mid))) continue;
      live.add(m.mid);
      if (!card) {
        card = { el: h('article', { class: 'market', 'data-mid': m.mid, 'data-type': m.ty }), books: [] };
        card.el.append(h('header', null, h('h3', null, m.na), h('span', { class: 'type' }, label(m.ty))));
        this.cards.set(m.mid, card);
        this.root.append(card.el);
      }
      for (const b of books) {
        live.add(b.mid);
        if (this.books.has(b.mid) || this.gone.has(b.mid)) continue;
        const book = new BookView(b.mid, b.r, this.early.get(b.mid) ?? b.s, !m.m || (this.early.get(m.mid) ?? m.s), b.title);
        card.books.push(book);
        card.el.append(book.el);
        this.books.set(b.mid, { book, card });
        const frame = held?.get(b.mid);
        if (frame) book.show(frame, held!.delay(b.mid));
        book.setFreshness(fresh(b.mid));
        book.setTerms(terms(b.mid));
      }
    }
    // Concluded while the socket was away, or before the subscribe took: a list read later is the truth.
    this.drop([...this.cards.keys(), ...this.books.keys()].filter((mid) => !live.has(mid)));
    this.say(this.cards.size ? undefined : 'No open markets in this event');
  }

  /** Results read over REST for markets that concluded before the page opened. */
  settled(results: MarketResult[]): void {
    for (const r of results) this.result(r);
  }

  /**
   * A frame the client's book kept, with how late it arrived (shown on its
   * book). Only one that follows the frame before it (same epoch, next seq) is
   * timed for the header: a subscribe's or a resume's images carry the publish
   * time of an update made before they were asked for.
   */
  odds(frame: OddsMessage, previous: OddsMessage | undefined, delay: ReceiptDelay | undefined): void {
    const live = previous !== undefined && previous.epoch === frame.epoch && frame.seq === previous.seq + 1;
    this.pending.set(frame.mid, { frame, delay, live });
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => this.flush());
  }

  state(msg: MarketStateMessage): void {
    if (msg.go) return this.drop([msg.mid]);
    const card = this.cards.get(msg.mid);
    if (card?.books.length === 1 && card.books[0].mid === msg.mid) card.books[0].setActive(msg.s);
    else if (card) for (const book of card.books) book.setParentActive(msg.s);
    else if (this.books.has(msg.mid)) this.books.get(msg.mid)!.book.setActive(msg.s);
    else this.early.set(msg.mid, msg.s);
  }

  /** A market's terms moved (a book not on screen yet takes them from the client when drawn). */
  terms(mid: string, terms: WireTerms | undefined): void {
    this.books.get(mid)?.book.setTerms(terms);
  }

  /** A market's prices went stale or live again (a book not on screen yet takes its state from the client when drawn). */
  freshness(state: MarketFreshness): void {
    this.books.get(state.mid)?.book.setFreshness(state);
  }

  result(msg: Pick<ResultMessage, 'mid' | 'res' | 'rt' | 'ia'>): void {
    const market = this.known.get(msg.mid);
    if (!market) return;
    const text = resultText(msg, market.runner);
    this.books.get(msg.mid)?.book.result(text);
    if (text) this.results.add(msg.mid, market.name, text);
  }

  /** Markets the server is done with (concluded, or detached): off the screen. */
  drop(mids: readonly string[]): void {
    for (const mid of mids) {
      // Concluded is final: a list read before the drop must not bring it back.
      this.gone.add(mid);
      const card = this.cards.get(mid);
      if (card) {
        card.el.remove();
        this.cards.delete(mid);
        for (const book of card.books) this.books.delete(book.mid);
        continue;
      }
      const on = this.books.get(mid);
      if (!on) continue;
      on.book.el.remove();
      this.books.delete(mid);
      on.card.books = on.card.books.filter((b) => b !== on.book);
      if (!on.card.books.length) this.drop([on.card.el.dataset.mid!]);
    }
    if (this.loaded && !this.cards.size && !this.note) this.say('No open markets in this event');
  }

  private learn(m: Market): void {
    this.known.set(m.mid, { name: m.na, runner: naming(m.r) });
    for (const n of m.m ?? []) this.known.set(n.mid, { name: `${m.na}: ${versus(n.r)}`, runner: naming(n.r) });
  }

  private flush(): void {
    this.scheduled = false;
    const now = Date.now();
    for (const { frame, delay, live } of this.pending.values()) {
      const on = this.books.get(frame.mid);
      if (!on) {
        if (this.loaded && !this.known.has(frame.mid)) this.unknown(frame.mid);
        continue;
      }
      on.book.show(frame, delay);
      if (live) this.delay.add(now - frame.pt);
    }
    this.pending.clear();
  }
}
