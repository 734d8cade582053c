import type { MarketStateMessage, ResultMessage, WireRunnerTerms, WireTerms } from '../odds/messages.js';

/** A runner withdrawn from a market, as its terms tell it: its reduction factor (percent) and when. */
export interface RunnerRemoval {
  mid: string;
  rid: number;
  /** Reduction factor, percent: matched prices on the others are reduced by it (see `reduce`). */
  factor?: number;
  /** When it was removed, ms since the epoch. */
  at?: number;
}

/** One winner's share in a dead heat (1: no dead heat). */
export interface Winner {
  rid: number;
  deadHeat: number;
}

/** A stake's share returned void on one runner (1: all of it). */
export interface Voided {
  rid: number;
  voidFactor: number;
}

/**
 * A market's settlement as a betting site settles bets by it: `settled` (winners with their
 * dead-heat shares), `void` (the market abandoned: every stake back), or `rolled back` (the
 * settlement or the void before it is undone: take back what was paid, the market may settle
 * again). `provisional` until the source confirms it.
 */
export interface Settlement {
  mid: string;
  kind: 'settled' | 'void' | 'rolled back';
  /** The result as REST gives it. */
  res: string;
  certainty?: 'provisional' | 'confirmed';
  /** When it was settled, ms since the epoch. */
  at?: number;
  winners: Winner[];
  /** Runners whose stakes are void in whole or part: removed runners, and any the source voided. */
  voids: Voided[];
}

/** The settlement a `result` frame says, or undefined for an unsettled one. */
export function settlementOf(r: ResultMessage): Settlement | undefined {
  const kind = r.rt ? 'rolled back' : r.ia ? 'void' : r.res !== '' || r.rs?.length ? 'settled' : undefined;
  if (!kind) return undefined;
  const out: Settlement = { mid: r.mid, kind, res: r.res, winners: [], voids: [] };
  if (r.cert) out.certainty = r.cert;
  if (r.at !== undefined) out.at = r.at;
  for (const x of r.rs ?? []) {
    if (x.st === 'WINNER' || x.st === 'PLACED') out.winners.push({ rid: x.rid, deadHeat: x.dh ?? 1 });
    const voidFactor = x.vf ?? (x.st === 'REMOVED' ? 1 : 0);
    if (voidFactor > 0) out.voids.push({ rid: x.rid, voidFactor });
  }
  return out;
}

/** Runners removed in `next` that were not in `prev`. */
function newlyRemoved(mid: string, prev: WireTerms | undefined, next: WireTerms | undefined): RunnerRemoval[] {
  const was = new Set((prev?.r ?? []).filter((r) => r.st === 'REMOVED').map((r) => r.rid));
  return (next?.r ?? []).filter((r) => r.st === 'REMOVED' && !was.has(r.rid)).map((r) => {
    const out: RunnerRemoval = { mid, rid: r.rid };
    if (r.af !== undefined) out.factor = r.af;
    if (r.rd !== undefined) out.at = r.rd;
    return out;
  });
}

/** What changed when a `market` or `result` frame was taken, for the client to tell its listeners. */
export interface TermsUpdate {
  /** The market's terms moved (a `terms` event). */
  terms?: { mid: string; terms: WireTerms | undefined; previous: WireTerms | undefined };
  /** Runners newly removed (a `removal` event each). */
  removals: RunnerRemoval[];
}

/**
 * Each market's newest `market` frame (its state and terms) and newest settlement, as the
 * client holds them beside its book: kept only for markets the client takes, and dropped with
 * them.
 */
export class TermsBook {
  private readonly states = new Map<string, MarketStateMessage>();
  private readonly settled = new Map<string, Settlement>();

  /** The market's state and terms as its newest `market` frame gave them. */
  state(mid: string): MarketStateMessage | undefined {
    return this.states.get(mid);
  }

  terms(mid: string): WireTerms | undefined {
    return this.states.get(mid)?.terms;
  }

  /** A runner's terms; one the market's terms leave out is ACTIVE. */
  runner(mid: string, rid: number): WireRunnerTerms | undefined {
    const terms = this.terms(mid);
    return terms && (terms.r?.find((r) => r.rid === rid) ?? { rid, st: 'ACTIVE' });
  }

  settlement(mid: string): Settlement | undefined {
    return this.settled.get(mid);
  }

  /** A `market` frame: kept, and what it changed. */
  market(msg: MarketStateMessage): TermsUpdate {
    const previous = this.states.get(msg.mid)?.terms;
    this.states.set(msg.mid, msg);
    const moved = JSON.stringify(previous) !== JSON.stringify(msg.terms);
    return { terms: moved ? { mid: msg.mid, terms: msg.terms, previous } : undefined, removals: newlyRemoved(msg.mid, previous, msg.terms) };
  }

  /** A `result` frame: its settlement, kept, or undefined while it says the market is unsettled. */
  result(msg: ResultMessage): Settlement | undefined {
    const s = settlementOf(msg);
    if (s) this.settled.set(msg.mid, s);
    else this.settled.delete(msg.mid);
    return s;
  }

  delete(mid: string): void {
    this.states.delete(mid);
    this.settled.delete(mid);
  }

  /** Keeps only the markets `keep` says (a lost connection: a concluded market's final frames will not come now). */
  retain(keep: (mid: string) => boolean): void {
    for (const mid of [...this.states.keys(), ...this.settled.keys()]) if (!keep(mid)) this.delete(mid);
  }
}
