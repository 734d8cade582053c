/**
 * The demo odds simulator: animates the listed markets like a betting exchange
 * and hands the changed books to `publish`, which feeds them through the ingest path. Each
 * fixture's markets are priced from one model of it (model.ts) that moves as a whole, so its
 * markets agree; each market keeps its state across ticks, so prices drift by a few ticks
 * instead of jumping. A match event (a goal, a VAR check, a wicket) suspends every market of the
 * fixture at once, saying why, and they reopen together at the prices the event moved them to;
 * while a ball is bowled the ball-by-ball markets run (`ball running`).
 */
import { systemClock, type Clock, type Ticker } from '../lib/clock.js';
import type { OddsImage, RunnerPrices } from '../odds/image.js';
import type { MarketStatus, SuspensionReason } from '../odds/messages.js';
import { isLineType, type LineType, type MarketType } from '../refdata/types.js';
import { FixtureModel, type MatchEvent } from './model.js';
import { LINE_RID, MARGIN, Quoter, type Prices } from './quote.js';

export interface SimMarket {
  mid: string; type: MarketType; inPlay: boolean; active: boolean; closed: boolean; rids: number[];
  /** Its name, which says what a market of its type asks ("Set 1 Winner", "Over/Under 2.5 Goals"). */
  name: string;
  /** Its event, and the event's start: together they name the fixture whose model prices it. */
  eventId: number;
  startTime: string;
  /** Where a line market opens, [min, max]; its type's usual range when absent. */
  line?: readonly [number, number];
  /** Its event's sport: soccer and cricket matches have events (goals, wickets, balls). */
  sportId?: number;
  /** Runners withdrawn (non-runners): quoted REMOVED with empty ladders, the others priced without them. */
  removed?: ReadonlySet<number>;
}

interface SimulatorOptions {
  /** Read each tick, so new and closed markets are picked up. */
  markets: () => SimMarket[];
  /** Called once per tick that changed anything, with the changed images only. */
  publish: (images: OddsImage[]) => void;
  /** Called at every tick, whether it changed anything or not: the simulator's sign of life as a publisher. */
  alive?: () => void;
  intervalMs?: number;
  random?: () => number;
  /** Its timer and the images' source times: the system's, unless a test moves its own. */
  clock?: Clock;
}

/**
 * The line markets (priced as one line, `b` Yes and `l` No) with their typical opening run lines
 * [min, max], so a 20-over session does not open at 2 runs.
 */
const LINE_START: Record<LineType, readonly [number, number]> = {
  session: [40, 180], 'ball-by-ball': [0, 2], 'odd-even': [30, 80], khadometer: [50, 90],
  'line-market': [150, 320], 'other-market': [10, 40],
};
/** In play, these pause while each ball is bowled. */
const BALL_TYPES: ReadonlySet<MarketType> = new Set<MarketType>(['session', 'ball-by-ball']);

const MAX_MARKETS_PER_TICK = 500;
const PRUNE_EVERY_TICKS = 64;
const P_CHANGE = { inPlay: 0.8, preMatch: 0.2 };
/** Ticks a fixture's markets stay suspended for each reason: [least, most]. */
const HOLD: Record<SuspensionReason, readonly [number, number]> = { goal: [8, 16], VAR: [8, 16], wicket: [4, 8], 'ball running': [1, 2] };
/** A goal is checked by VAR this often, and a check rules it out this often. */
const P_VAR = 0.3;
const P_OVERTURNED = 0.3;
/** A line's share left after a wicket: fewer runs expected. */
const AFTER_WICKET = 0.93;

interface SimBook extends Prices {
  status: MarketStatus | null; // null until the first image
  /** Why it is suspended or its ball running, as last published. */
  suspensionReason?: SuspensionReason;
  inPlay: boolean;
  /** Last published ladders, republished unchanged while paused. */
  runners: RunnerPrices[];
  /** The model and its version the ladders were quoted at. */
  model: FixtureModel | undefined;
  version: number;
}

/** A fixture's model, the tick it last had its chance to move, and the event its markets are suspended for. */
interface FixtureState {
  readonly model: FixtureModel;
  tick: number;
  hold?: MatchEvent & { ticks: number };
}

export class Simulator {
  private readonly books = new Map<string, SimBook>();
  private readonly fixtures = new Map<string, FixtureState>();
  private readonly random: () => number;
  private readonly quoter: Quoter;
  private readonly clock: Clock;
  private timer: Ticker | undefined;
  private cursor = 0;
  private ticks = 0;

  constructor(private readonly opts: SimulatorOptions) {
    this.random = opts.random ?? Math.random;
    this.clock = opts.clock ?? systemClock;
    this.quoter = new Quoter(this.random);
  }

  start(): void {
    if (this.timer) return;
    this.timer = this.clock.every(this.opts.intervalMs ?? 250, () => {
      this.opts.alive?.();
      const images = this.tick();
      if (images.length) this.opts.publish(images);
    });
  }

  stop(): void {
    this.timer?.stop();
    this.timer = undefined;
  }

  /** One step over up to MAX_MARKETS_PER_TICK markets (round robin beyond that). */
  tick(): OddsImage[] {
    const all = this.opts.markets();
    const ts = this.clock.now();
    const out: OddsImage[] = [];
    const n = Math.min(all.length, MAX_MARKETS_PER_TICK);
    for (let k = 0; k < n; k++) {
      const m = all[(this.cursor + k) % all.length];
      const book = this.bookFor(m);
      if (book && this.advance(m, book, this.fixtureOf(m))) {
        const image: OddsImage = { marketId: m.mid, sourceTime: ts, status: book.status as MarketStatus, inPlay: m.inPlay, runners: book.runners };
        if (book.suspensionReason) image.suspensionReason = book.suspensionReason;
        if (book.rids.length) image.tradedVolume = Math.round(book.tradedVolumes.reduce((a, b) => a + b, 0) * 100) / 100;
        out.push(image);
        book.inPlay = m.inPlay;
      }
    }
    this.cursor = n ? (this.cursor + n) % all.length : 0;
    if (++this.ticks % PRUNE_EVERY_TICKS === 0) this.prune(all);
    return out;
  }

  /** A market with neither runners nor a line type (a player-race parent) has no book. */
  private bookFor(m: SimMarket): SimBook | undefined {
    const opening = m.rids.length || !isLineType(m.type) ? undefined : m.line ?? LINE_START[m.type];
    if (!m.rids.length && !opening) return undefined;
    const book = this.books.get(m.mid);
    // A market listed again after it closed (a demo slot's next fixture) trades from a fresh book.
    if (book && sameRids(book.rids, m.rids) && !(book.status === 'CLOSED' && !m.closed)) return book;
    const start = opening ? this.quoter.int(...opening) : 0;
    const fresh: SimBook = {
      status: null, inPlay: m.inPlay, rids: [...m.rids], model: undefined, version: 0,
      line: start, baseLine: start, runners: [], tradedVolumes: m.rids.map(() => 0),
    };
    this.books.set(m.mid, fresh);
    return fresh;
  }

  /**
   * The market's fixture, given its chance to move once a tick: its match goes on (an event now
   * and then, which holds its markets suspended a few ticks), and every open market of the fixture
   * then quotes from where it moved to.
   */
  private fixtureOf(m: SimMarket): FixtureState {
    const key = `${m.eventId} ${m.startTime}`;
    let f = this.fixtures.get(key);
    if (!f) {
      f = { model: new FixtureModel(this.random, m.sportId), tick: this.ticks };
      this.fixtures.set(key, f);
    } else if (f.tick !== this.ticks) {
      f.tick = this.ticks;
      if (f.hold && --f.hold.ticks <= 0) f.hold = this.afterHold(f);
      if (this.quoter.chance(m.inPlay ? P_CHANGE.inPlay : P_CHANGE.preMatch)) f.model.move(m.inPlay);
      const event = f.hold ? undefined : f.model.event(m.inPlay);
      if (event) f.hold = { ...event, ticks: this.quoter.int(...HOLD[event.reason]) };
    }
    return f;
  }

  /** What follows a suspension: a goal may go to VAR, which may rule it out; otherwise play resumes. */
  private afterHold(f: FixtureState): FixtureState['hold'] {
    if (f.hold?.reason !== 'goal' || !this.quoter.chance(P_VAR)) return undefined;
    if (this.quoter.chance(P_OVERTURNED)) f.model.overturn();
    return { reason: 'VAR', balls: false, ticks: this.quoter.int(...HOLD.VAR) };
  }

  /** Moves the book one tick; true when its image changed and must be published. */
  private advance(m: SimMarket, book: SimBook, fixture: FixtureState): boolean {
    const model = fixture.model;
    if (book.status === 'CLOSED') return false;
    if (m.closed) {
      book.status = 'CLOSED';
      book.runners = (book.rids.length ? book.rids : [LINE_RID]).map((rid): RunnerPrices => ({ runnerId: rid, status: 'ACTIVE', back: [], lay: [] }));
      return true;
    }
    if (!m.active) {
      const unchanged = book.status === 'SUSPENDED' && !book.suspensionReason && book.inPlay === m.inPlay;
      if (!book.runners.length) book.runners = this.quote(m, book, model);
      // Inactive is no timed pause, nor an event: it lasts until the market is active again.
      book.status = 'SUSPENDED';
      book.suspensionReason = undefined;
      return !unchanged;
    }
    const hold = m.inPlay && fixture.hold && (!fixture.hold.balls || BALL_TYPES.has(m.type)) ? fixture.hold : undefined;
    if (hold) {
      const status = hold.balls ? 'BALL_RUNNING' : 'SUSPENDED';
      if (book.status === status && book.suspensionReason === hold.reason) return false;
      if (!book.runners.length) book.runners = this.quote(m, book, model);
      book.status = status;
      book.suspensionReason = hold.reason;
      return true;
    }
    const unchanged = book.status === 'OPEN' && book.inPlay === m.inPlay;
    // A runner market quotes again when its fixture moved; a line moves by itself.
    const moves = book.rids.length ? book.model !== model || book.version !== model.version : this.quoter.chance(m.inPlay ? P_CHANGE.inPlay : P_CHANGE.preMatch);
    if (unchanged && !moves) return false;
    book.runners = this.quote(m, book, model, book.suspensionReason);
    book.status = 'OPEN';
    book.suspensionReason = undefined;
    return true;
  }

  /** The book's quote now; after a ball a line moves, after a wicket it falls. */
  private quote(m: SimMarket, book: SimBook, model: FixtureModel, after?: SuspensionReason): RunnerPrices[] {
    if (!book.rids.length) {
      if (after === 'wicket') book.line = Math.round(book.line * AFTER_WICKET);
      return [this.quoter.line(book, after === 'ball running')];
    }
    book.model = model;
    book.version = model.version;
    const running = book.rids.filter((rid) => !m.removed?.has(rid));
    const fair = new Map(model.fair({ type: m.type, name: m.name, rids: running }).map((p, i) => [running[i], p]));
    return this.quoter.runners(book, book.rids.map((rid) => fair.get(rid) ?? 0), MARGIN[m.type] ?? 0, m.removed);
  }

  /** Drops books of markets and models of fixtures no longer listed, so a long-running demo does not grow. */
  private prune(all: SimMarket[]): void {
    const listed = new Set(all.map((m) => m.mid));
    for (const mid of this.books.keys()) if (!listed.has(mid)) this.books.delete(mid);
    const fixtures = new Set(all.map((m) => `${m.eventId} ${m.startTime}`));
    for (const key of this.fixtures.keys()) if (!fixtures.has(key)) this.fixtures.delete(key);
  }
}

function sameRids(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
