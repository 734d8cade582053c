/**
 * The demo odds simulator: animates the listed markets like a betting exchange
 * and hands the changed books to `publish`, which feeds them through the ingest path. Each market
 * keeps its state across ticks, so prices drift by a few ticks instead of jumping.
 */
import type { MarketStatus, OddsImage, PriceSize, RunnerOdds } from '../odds/messages.js';
import type { MarketType } from '../refdata/types.js';
import { tickDown, tickUp } from './ladder.js';

export interface SimMarket { mid: string; ty: MarketType; inPlay: boolean; active: boolean; closed: boolean; rids: number[] }

export interface SimulatorOptions {
  /** Read each tick, so new and closed markets are picked up. */
  markets: () => SimMarket[];
  /** Called once per tick that changed anything, with the changed images only. */
  publish: (images: OddsImage[]) => void;
  intervalMs?: number;
  random?: () => number;
  now?: () => number;
}

/**
 * The fancy markets the spec gives no runners, priced as one line (`b` Yes, `l` No), with their
 * typical opening run lines [min, max] so a 20-over session does not open at 2 runs.
 */
const LINE_START: Partial<Record<MarketType, readonly [number, number]>> = {
  session: [40, 180], 'ball-by-ball': [0, 2], 'odd-even': [30, 80], khadometer: [50, 90],
  'line-market': [150, 320], 'other-market': [10, 40],
};
/** A line's one book still needs a runner ID on the wire; 1 is the simulator's convention. */
const LINE_RID = 1;
/** In play, these pause while each ball is bowled. */
const BALL_TYPES: ReadonlySet<MarketType> = new Set<MarketType>(['session', 'ball-by-ball']);

const MAX_MARKETS_PER_TICK = 500;
const PRUNE_EVERY_TICKS = 64;
const P_CHANGE = { inPlay: 0.8, preMatch: 0.2 };
const P_SUSPEND = 1 / 50;
const P_BALL_RUNNING = 1 / 8;
/** Half-width of each runner's log-strength step; in play trades far more nervously. */
const STEP = { inPlay: 0.03, preMatch: 0.01 };
/** Pull back towards the opening strengths, so a long demo never drifts to 1.01 v 1000. */
const REVERSION = 0.005;
/** Fair prices stay inside this, which leaves room for three back and lay levels. */
const FAIR_MIN = 1.1;
const FAIR_MAX = 500;
const LEVELS = 3;

interface Book {
  st: MarketStatus | null; // null until the first image
  ip: boolean;
  hold: number; // ticks left in a SUSPENDED or BALL_RUNNING pause
  rids: number[];
  /** Log weights of the runners; their softmax is the fair probability (sums to 100%). */
  strength: number[];
  base: number[];
  /** No line of a line market, and where it opened. */
  line: number;
  baseLine: number;
  /** Last published ladders, republished unchanged while paused. */
  r: RunnerOdds[];
}

export class Simulator {
  private readonly books = new Map<string, Book>();
  private readonly random: () => number;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private cursor = 0;
  private ticks = 0;

  constructor(private readonly opts: SimulatorOptions) {
    this.random = opts.random ?? Math.random;
    this.now = opts.now ?? Date.now;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      const images = this.tick();
      if (images.length) this.opts.publish(images);
    }, this.opts.intervalMs ?? 250);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One step over up to MAX_MARKETS_PER_TICK markets (round robin beyond that). */
  tick(): OddsImage[] {
    const all = this.opts.markets();
    const ts = this.now();
    const out: OddsImage[] = [];
    const n = Math.min(all.length, MAX_MARKETS_PER_TICK);
    for (let k = 0; k < n; k++) {
      const m = all[(this.cursor + k) % all.length];
      const book = this.bookFor(m);
      if (book && this.advance(m, book)) {
        out.push({ mid: m.mid, ts, st: book.st as MarketStatus, ip: m.inPlay, r: book.r });
        book.ip = m.inPlay;
      }
    }
    this.cursor = n ? (this.cursor + n) % all.length : 0;
    if (++this.ticks % PRUNE_EVERY_TICKS === 0) this.prune(all);
    return out;
  }

  /** A market with neither runners nor a line type (a player-race parent) has no book. */
  private bookFor(m: SimMarket): Book | undefined {
    const opening = m.rids.length ? undefined : LINE_START[m.ty];
    if (!m.rids.length && !opening) return undefined;
    const book = this.books.get(m.mid);
    if (book && sameRids(book.rids, m.rids)) return book;
    const base = m.rids.map(() => Math.log(0.3 + this.random()));
    const start = opening ? this.int(...opening) : 0;
    const fresh: Book = {
      st: null, ip: m.inPlay, hold: 0, rids: [...m.rids], strength: [...base], base,
      line: start, baseLine: start, r: [],
    };
    this.books.set(m.mid, fresh);
    return fresh;
  }

  /** Moves the book one tick; true when its image changed and must be published. */
  private advance(m: SimMarket, book: Book): boolean {
    if (book.st === 'CLOSED') return false;
    if (m.closed) {
      book.st = 'CLOSED';
      book.r = (book.rids.length ? book.rids : [LINE_RID]).map((rid) => ({ rid, st: 'ACTIVE', b: [], l: [] }));
      return true;
    }
    if (!m.active) {
      const unchanged = book.st === 'SUSPENDED' && book.ip === m.inPlay;
      if (!book.r.length) book.r = this.quote(m, book, false);
      book.st = 'SUSPENDED';
      book.hold = 0; // inactive is no timed pause: it lasts until the market is active again
      return !unchanged;
    }
    if (book.hold > 0 && --book.hold > 0) return false;
    const wasOpen = book.st === 'OPEN';
    if (wasOpen && m.inPlay && this.chance(P_SUSPEND)) return this.pause(book, 'SUSPENDED', 2, 5);
    if (wasOpen && m.inPlay && BALL_TYPES.has(m.ty) && this.chance(P_BALL_RUNNING)) {
      return this.pause(book, 'BALL_RUNNING', 1, 2);
    }
    const unchanged = wasOpen && book.ip === m.inPlay;
    if (unchanged && !this.chance(m.inPlay ? P_CHANGE.inPlay : P_CHANGE.preMatch)) return false;
    book.r = this.quote(m, book, book.st === 'BALL_RUNNING');
    book.st = 'OPEN';
    return true;
  }

  /** Pauses for minTicks..maxTicks; the ladders stay in the image, untradeable. */
  private pause(book: Book, st: MarketStatus, minTicks: number, maxTicks: number): true {
    book.st = st;
    book.hold = this.int(minTicks, maxTicks);
    return true;
  }

  private quote(m: SimMarket, book: Book, afterBall: boolean): RunnerOdds[] {
    return book.rids.length ? this.quoteRunners(m, book) : [this.quoteLine(book, afterBall)];
  }

  private quoteRunners(m: SimMarket, book: Book): RunnerOdds[] {
    const width = m.inPlay ? STEP.inPlay : STEP.preMatch;
    let total = 0;
    for (let i = 0; i < book.strength.length; i++) {
      const s = book.strength[i];
      book.strength[i] = s + REVERSION * (book.base[i] - s) + (2 * this.random() - 1) * width;
      total += Math.exp(book.strength[i]);
    }
    return book.rids.map((rid, i) => {
      const fair = Math.min(FAIR_MAX, Math.max(FAIR_MIN, total / Math.exp(book.strength[i])));
      // Best back just under fair and best lay at or over it: the back book carries the overround.
      const back = tickDown(fair);
      const lay = tickUp(back, this.chance(0.7) ? 1 : this.int(2, 3));
      return { rid, st: 'ACTIVE', b: this.levels(back, tickDown), l: this.levels(lay, tickUp) };
    });
  }

  /** Best price first, each further level one or two ticks worse. */
  private levels(best: number, worse: (price: number, n: number) => number): PriceSize[] {
    const out: PriceSize[] = [[best, this.size()]];
    while (out.length < LEVELS) out.push([worse(out[out.length - 1][0], this.int(1, 2)), this.size()]);
    return out;
  }

  /** No at the line, Yes a run above at even rates, or both at the line with a 90/110 split. */
  private quoteLine(book: Book, afterBall: boolean): RunnerOdds {
    // A ball has just been bowled, so the line always moves; otherwise it may hold.
    const delta = afterBall ? (this.chance(0.3) ? -1 : this.int(1, 2)) : this.int(-1, 1);
    const drift = Math.max(2, Math.round(book.baseLine / 5));
    let moved = book.line + delta;
    // Turn back at zero runs or at the edge of the drift band rather than stand still.
    if (moved < 0 || Math.abs(moved - book.baseLine) > drift) moved = book.line - delta;
    book.line = Math.max(0, moved);
    const split = this.chance(0.3);
    return {
      rid: LINE_RID, st: 'ACTIVE',
      b: [[split ? book.line : book.line + 1, split ? 90 : 100]],
      l: [[book.line, split ? 110 : 100]],
    };
  }

  /** Drops books of markets no longer listed, so a long-running demo does not grow. */
  private prune(all: SimMarket[]): void {
    const listed = new Set(all.map((m) => m.mid));
    for (const mid of this.books.keys()) if (!listed.has(mid)) this.books.delete(mid);
  }

  /** Mostly small stakes with the odd large one, 5.00 to 2500.00. */
  private size(): number {
    const r = this.random();
    return Math.round(500 + r * r * 249500) / 100;
  }

  private chance(p: number): boolean {
    return this.random() < p;
  }

  private int(lo: number, hi: number): number {
    return lo + Math.floor(this.random() * (hi - lo + 1));
  }
}

function sameRids(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
