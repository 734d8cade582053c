import type { ReceiptDelay } from '../client/index.js';
import type { MarketStatus, OddsMessage, PriceSize, RunnerOdds, RunnerStatus, WireRunnerTerms, WireTerms } from '../odds/messages.js';
import type { WireRunner as Runner } from '../refdata/wire.js';
import { formatAge, formatVolume } from '../client/format.js';
import type { FreshnessReason, MarketFreshness } from '../client/freshness.js';
import { h } from './dom.js';

/** Levels a side the board asks for (`depth`) and draws for markets with runners; lines have one. */
export const DEPTH = 3;
/** The one book of a session or line market: `b` is Yes and `l` is No, price the run line and size the rate. */
const LINE_RID = 1;

type BookState = 'open' | 'suspended' | 'ball-running' | 'closed';
const BADGES: Record<BookState, string> = { open: '', suspended: 'Suspended', 'ball-running': 'Ball running', closed: 'Closed' };
/** Why a book's prices are not live, in a few words. */
const NOT_LIVE: Record<FreshnessReason, string> = {
  bus: 'Not live: service cut off', publisher: 'Not live: no feed', unreliable: 'Not live: unreliable', late: 'Not live: late data', behind: 'Not live: slow connection', disconnected: 'Not live: offline',
};
const RUNNER_TAGS: Record<RunnerStatus | WireRunnerTerms['st'], string> = {
  ACTIVE: '', SUSPENDED: 'suspended', WINNER: 'winner', LOSER: 'loser', REMOVED: 'removed', PLACED: 'placed', HIDDEN: 'hidden',
};
/** A time of day as a race card shows it: 13:55. */
const hhmm = (ms: number): string => new Date(ms).toTimeString().slice(0, 5);

/**
 * A runner's standing by its market's terms, shown in its row: a non-runner with its reduction
 * factor and when it was withdrawn; placed or hidden; otherwise nothing (the book's status shows).
 */
function termsTag(t: WireRunnerTerms | undefined): string {
  if (!t || t.st === 'ACTIVE') return '';
  if (t.st !== 'REMOVED') return RUNNER_TAGS[t.st];
  return ['non-runner', t.af === undefined ? '' : `RF ${t.af}%`, t.rd === undefined ? '' : hhmm(t.rd)].filter(Boolean).join(' · ');
}

/** What a market's terms add to its book's head: the bet delay in play, the places paid, each way, BSP. */
function termsLine(t: WireTerms | undefined): string {
  if (!t) return '';
  return [(t.nw ?? 1) > 1 ? `${t.nw} places` : '', t.ewd ? `EW 1/${t.ewd}` : '', t.bsp ? 'BSP' : ''].filter(Boolean).join(' · ');
}

const sizes = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
/** As every betting screen shows odds: 2.00, never 2; from 100 the ladder is whole (110), and shown so. A line book's price is a run line: 58. */
const odds = (p: number): string => (p < 100 ? p.toFixed(2) : String(p));
const runs = (p: number): string => String(p);

/** One price and size on screen, with what it shows, so an unchanged value costs a comparison. */
class Cell {
  readonly el: HTMLElement;
  private readonly price = document.createTextNode('');
  private readonly size = document.createTextNode('');
  private p: number | undefined;
  private s: number | undefined;

  constructor(side: 'b' | 'l', level: number, private readonly text: (price: number) => string) {
    this.el = h('td', { class: `c ${side} d${level}` }, h('b', null, this.price), h('small', null, this.size));
  }

  show(level: PriceSize | undefined): void {
    const [p, s] = level ?? [undefined, undefined];
    if (p !== this.p) {
      // A move, not a first price or a price going away: marked up or down.
      if (p !== undefined && this.p !== undefined) {
        this.el.dataset.move = p > this.p ? 'up' : 'down';
        // Alternating between two identical animations restarts the mark without a forced layout.
        this.el.classList.toggle('again');
      }
      this.price.data = p === undefined ? '' : this.text(p);
      this.p = p;
    }
    if (s !== this.s) {
      this.size.data = s === undefined ? '' : sizes.format(s);
      this.s = s;
    }
  }
}

class RunnerRow {
  readonly el: HTMLTableRowElement;
  private readonly back: Cell[] = [];
  private readonly lay: Cell[] = [];
  private readonly tag = document.createTextNode('');
  private readonly traded = document.createTextNode('');
  private st: RunnerStatus | undefined;
  private ltp: number | undefined;
  /** Its terms' status text (a non-runner, placed), which overrides the book's. */
  private standing = '';

  constructor(name: string, levels: number, text: (price: number) => string) {
    for (let i = 0; i < levels; i++) {
      this.back.push(new Cell('b', i + 1, text));
      this.lay.push(new Cell('l', i + 1, text));
    }
    // Best back and best lay meet in the middle, as on an exchange.
    const head = h('th', { scope: 'row' }, name, h('em', null, this.tag), h('small', { class: 'ltp' }, this.traded));
    this.el = h('tr', null, head, ...[...this.back].reverse().map((c) => c.el), ...this.lay.map((c) => c.el));
  }

  show(r: RunnerOdds | undefined): void {
    for (let i = 0; i < this.back.length; i++) {
      this.back[i].show(r?.b[i]);
      this.lay[i].show(r?.l[i]);
    }
    if (r?.ltp !== this.ltp) {
      this.traded.data = r?.ltp === undefined ? '' : `LTP ${odds(r.ltp)}`;
      this.ltp = r?.ltp;
    }
    const st = r?.st;
    if (st !== this.st) {
      this.st = st;
      this.tagged();
    }
  }

  /** Its terms: a non-runner says so, with its factor and time, whatever its ladder shows. */
  setTerms(t: WireRunnerTerms | undefined): void {
    const standing = termsTag(t);
    this.el.title = t?.af === undefined ? '' : `Reduction factor ${t.af}%`;
    if (standing === this.standing) return;
    this.standing = standing;
    this.tagged();
  }

  private tagged(): void {
    this.tag.data = this.standing || (this.st ? RUNNER_TAGS[this.st] : '');
    const st = this.standing && this.standing.startsWith('non-runner') ? 'removed' : this.st && this.st !== 'ACTIVE' ? this.st.toLowerCase() : undefined;
    if (st) this.el.dataset.st = st;
    else delete this.el.dataset.st;
  }
}

/**
 * One book on screen: a market with runners, a session or line market, or one
 * head-to-head of a player race. Built once; each frame touches only the cells
 * whose values changed, and the state attribute only when it moves.
 */
export class BookView {
  readonly el: HTMLElement;
  private readonly rows = new Map<number, RunnerRow>();
  private readonly body: HTMLTableSectionElement;
  private readonly badge = document.createTextNode('');
  private readonly matched = document.createTextNode('');
  private readonly lateText = document.createTextNode('');
  private readonly late: HTMLElement;
  private readonly fresh = document.createTextNode('');
  private readonly betDelay = document.createTextNode('');
  private readonly termsText = document.createTextNode('');
  /** Said until the book's first image: a book of empty cells looks like a market nobody prices. */
  private readonly waiting = document.createTextNode('No prices yet');
  private tv: number | undefined;
  /** Why it is suspended, as its newest frame says. */
  private sr: string | undefined;
  private readonly resultLine: HTMLElement;
  private readonly levels: number;
  private readonly text: (price: number) => string;
  private st: MarketStatus | undefined;
  private shown: BookState | undefined;

  constructor(
    readonly mid: string,
    runners: Runner[] | undefined,
    private active: boolean,
    /** A player race's own `s`: its head-to-heads trade only while it is active too. */
    private parentActive: boolean,
    title?: string,
  ) {
    this.levels = runners ? DEPTH : 1;
    this.text = runners ? odds : runs;
    const heads = runners ? ['Back', 'Lay'] : ['Yes', 'No'];
    const pad = (n: number) => Array.from({ length: n }, (_, i) => h('th', { class: `d${this.levels - i}` }));
    this.body = h('tbody');
    for (const r of runners ?? [{ rid: LINE_RID, na: 'Line' }]) this.row(r.rid, r.na);
    this.resultLine = h('p', { class: 'result', hidden: '' });
    this.late = h('span', { class: 'delay' }, this.lateText);
    this.el = h('div', { class: 'book', 'data-mid': mid },
      h('div', { class: 'book-head' },
        h('span', { class: 'sub' }, title ?? ''), h('span', { class: 'terms' }, this.termsText), h('span', { class: 'matched' }, this.matched), this.late,
        h('span', { class: 'waiting' }, this.waiting), h('span', { class: 'bet-delay' }, this.betDelay), h('span', { class: 'fresh' }, this.fresh), h('span', { class: 'badge' }, this.badge)),
      h('table', { class: 'ladder' },
        h('thead', null, h('tr', null, h('th'), ...pad(this.levels - 1), h('th', { class: 'b d1' }, heads[0]), h('th', { class: 'l d1' }, heads[1]), ...pad(this.levels - 1).reverse())),
        this.body),
      this.resultLine);
    this.refresh();
  }

  /** Draws the frame, and how late it arrived: from the source's time, and (in the title) from the service's publish time. */
  show(frame: OddsMessage, delay?: ReceiptDelay): void {
    this.waiting.data = '';
    if (delay) {
      // A delay past a day is a market whose prices stopped long ago: said as since when.
      const now = Date.now();
      const [source, publish] = [formatAge(delay.source, now), formatAge(delay.publish, now)];
      this.lateText.data = source;
      this.late.title = source.startsWith('no data')
        ? `${source} by the source's time; ${publish.startsWith('no data') ? publish.replace('no data since', 'published') : `published ${publish} before it arrived`}`
        : `arrived ${source} after the source's time, ${publish} after the service published it`;
    }
    const seen = new Set<number>();
    for (const r of frame.r) {
      (this.rows.get(r.rid) ?? this.row(r.rid, `Runner ${r.rid}`)).show(r);
      seen.add(r.rid);
    }
    for (const [rid, row] of this.rows) if (!seen.has(rid)) row.show(undefined);
    if (frame.tv !== this.tv) {
      this.matched.data = frame.tv === undefined ? '' : `Matched ${formatVolume(frame.tv)}`;
      this.tv = frame.tv;
    }
    this.st = frame.st;
    this.sr = frame.sr;
    this.refresh();
  }

  /** The market's terms: the bet delay when there is one, the places, each way and BSP, each runner's standing. */
  setTerms(terms: WireTerms | undefined): void {
    this.betDelay.data = terms?.bd ? `Bet delay ${terms.bd} s` : '';
    this.termsText.data = termsLine(terms);
    for (const [rid, row] of this.rows) row.setTerms(terms && (terms.r?.find((r) => r.rid === rid) ?? { rid, st: 'ACTIVE' }));
  }

  setActive(active: boolean): void {
    this.active = active;
    this.refresh();
  }

  setParentActive(active: boolean): void {
    this.parentActive = active;
    this.refresh();
  }

  /** Live, or stale with why: a stale book is greyed and says why, whatever its market's status. */
  setFreshness(state: MarketFreshness): void {
    const text = state.live ? '' : NOT_LIVE[state.why];
    if (text === this.fresh.data) return;
    this.fresh.data = text;
    if (state.live) delete this.el.dataset.fresh;
    else this.el.dataset.fresh = state.why;
  }

  result(text: string): void {
    this.resultLine.textContent = text;
    this.resultLine.hidden = !text;
  }

  private row(rid: number, name: string): RunnerRow {
    const row = new RunnerRow(name, this.levels, this.text);
    this.rows.set(rid, row);
    this.body.append(row.el);
    return row;
  }

  private refresh(): void {
    const state: BookState = this.st === 'CLOSED' ? 'closed'
      : !this.active || !this.parentActive || this.st === 'SUSPENDED' ? 'suspended'
      : this.st === 'BALL_RUNNING' ? 'ball-running' : 'open';
    // A suspension says why when its source did: "Suspended · goal".
    const badge = state === 'suspended' && this.sr && this.active && this.parentActive ? `${BADGES[state]} · ${this.sr}` : BADGES[state];
    if (state === this.shown && badge === this.badge.data) return;
    this.el.dataset.state = state;
    this.badge.data = badge;
    this.shown = state;
  }
}
