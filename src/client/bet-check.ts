import type { MarketStateMessage, MarketStatus, OddsMessage, RunnerStatus, WireRunnerTerms } from '../odds/messages.js';
import type { MarketFreshness } from './freshness.js';
import type { ReceiptDelay } from './market-book.js';
import type { Settlement } from './terms.js';

/** Backing takes the best price available to back (`b`), laying the best available to lay (`l`). */
export type Side = 'back' | 'lay';

/**
 * The one answer to "can I take this bet?" for a market, runner and side, from everything the
 * client holds: `ok` only when every part says yes, and `why` says which did not.
 */
export interface BetAnswer {
  mid: string;
  rid: number;
  side: Side;
  ok: boolean;
  /** Why not, each in a few words; empty when ok. */
  why: string[];
  /** The best price and size on that side, when there is one. */
  price?: number;
  size?: number;
  /** How old the price is, ms: since the service published it (`pt`) and since it arrived, by this machine's clock. */
  age?: { published: number; received: number };
  /** Whether the market's prices are live, or stale with why. */
  freshness: MarketFreshness;
  market: {
    /** The book's status: only OPEN takes bets. */
    status?: MarketStatus;
    /** Why it is suspended or its ball running, when the source says (goal, wicket, VAR, ball running...). */
    suspendReason?: string;
    inPlay?: boolean;
    /** The market's state (`s`, `go`) as its newest `market` frame gave it. */
    active?: boolean;
    concluded?: boolean;
    /** How its newest `result` frame left it (`rt`, `ia`, `res`, `rs`): settled or void refuse bets; absent while unsettled. */
    settlement?: Settlement['kind'];
    /** Seconds to hold the bet before it is matched; undefined when the market's terms do not say. */
    betDelay?: number;
    turnInPlay?: boolean;
  };
  runner: {
    /** Its status by the market's terms (REMOVED, WINNER...), else by the book. */
    status?: WireRunnerTerms['st'] | RunnerStatus;
    /** Its reduction factor, percent: what matched prices on the others lose if it is removed. */
    adjustmentFactor?: number;
    removedAt?: number;
    handicap?: number;
  };
}

/** What the client holds of one market, for the check. */
export interface HeldMarket {
  frame: OddsMessage | undefined;
  delay: ReceiptDelay | undefined;
  freshness: MarketFreshness;
  state: MarketStateMessage | undefined;
  settlement: Settlement | undefined;
}

function marketPart(held: HeldMarket, why: string[]): BetAnswer['market'] {
  const { frame, state, freshness } = held;
  const out: BetAnswer['market'] = {};
  if (frame) {
    out.status = frame.st;
    if (frame.sr !== undefined) out.suspendReason = frame.sr;
    out.inPlay = frame.ip;
    if (frame.st !== 'OPEN') why.push(`market ${frame.st}${frame.sr ? ` (${frame.sr})` : ''}`);
  } else why.push('no prices for the market');
  if (!freshness.live) why.push(`prices stale: ${freshness.why}`);
  if (state) {
    out.active = state.s;
    out.concluded = state.go;
    if (!state.s) why.push('market inactive');
    if (state.go) why.push('market concluded');
    if (state.terms?.bd !== undefined) out.betDelay = state.terms.bd;
    if (state.terms?.tip !== undefined) out.turnInPlay = state.terms.tip;
  }
  // The `market` frame may still say active while the result already settled it; a rollback withdrew it.
  const settled = held.settlement?.kind;
  if (settled !== undefined) out.settlement = settled;
  if (settled === 'settled' || settled === 'void') why.push(`market ${settled}`);
  return out;
}

function runnerPart(held: HeldMarket, rid: number, why: string[]): BetAnswer['runner'] {
  const book = held.frame?.r.find((r) => r.rid === rid);
  const terms = held.state?.terms && (held.state.terms.r?.find((r) => r.rid === rid) ?? { rid, st: 'ACTIVE' as const });
  const out: BetAnswer['runner'] = {};
  if (held.frame && !book) why.push(`runner ${rid} not in the market`);
  // The terms' status is the exchange's word (REMOVED, PLACED, HIDDEN); the book's stands in without terms.
  const status = terms && terms.st !== 'ACTIVE' ? terms.st : book?.st ?? terms?.st;
  if (status !== undefined) out.status = status;
  if (status !== undefined && status !== 'ACTIVE') why.push(`runner ${status}`);
  if (terms?.af !== undefined) out.adjustmentFactor = terms.af;
  if (terms?.rd !== undefined) out.removedAt = terms.rd;
  if (terms?.hc !== undefined) out.handicap = terms.hc;
  return out;
}

/** Whether a bet on `rid` at the best `side` price can be taken now, and everything that answer rests on. */
export function checkBet(mid: string, rid: number, side: Side, held: HeldMarket, now = Date.now()): BetAnswer {
  const why: string[] = [];
  const market = marketPart(held, why);
  const runner = runnerPart(held, rid, why);
  const answer: BetAnswer = { mid, rid, side, ok: false, why, freshness: held.freshness, market, runner };
  // Called from JavaScript, 'Back' would have read as lay: the other side's price, said to be ok.
  const ladder = side === 'back' ? 'b' : side === 'lay' ? 'l' : undefined;
  const best = ladder && held.frame?.r.find((r) => r.rid === rid)?.[ladder][0];
  if (!ladder) why.push(`side ${JSON.stringify(side)} is neither back nor lay`);
  else if (best) [answer.price, answer.size] = best;
  else if (held.frame) why.push(`no ${side} price`);
  if (held.frame && held.delay) answer.age = { published: now - held.frame.pt, received: now - held.delay.at };
  answer.ok = why.length === 0;
  return answer;
}
