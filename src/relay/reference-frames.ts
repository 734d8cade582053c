import type { ModelChange } from '../refdata/model.js';
import type { Market, MarketResult, NestedMarket } from '../refdata/types.js';
import { settlementToWire, termsToWire } from '../refdata/wire.js';
import type { MarketStateMessage, ResultMessage } from '../odds/messages.js';
import type { Broadcaster } from '../hub/broadcaster.js';

/**
 * The frames' wire keys are the REST keys of the market and the result (docs/protocol.md), and
 * beside them what REST does not carry: a market's terms, a result's settlement.
 */
function stateFrame(mid: string, state: Pick<Market, 'isActive' | 'concluded' | 'recalled' | 'terms'>): MarketStateMessage {
  const frame: MarketStateMessage = { op: 'market', mid, s: state.isActive, go: state.concluded, rt: state.recalled };
  if (state.terms) frame.terms = termsToWire(state.terms);
  return frame;
}

function resultFrame(r: MarketResult): ResultMessage {
  const frame: ResultMessage = { op: 'result', mid: r.marketId, mt: r.marketType, res: r.outcome, rt: r.recalled, ia: r.abandoned };
  return r.settlement ? { ...frame, ...settlementToWire(r.settlement) } : frame;
}

const stateMoved = (before: Market | NestedMarket | undefined, after: Market | NestedMarket): boolean =>
  !before || before.isActive !== after.isActive || before.concluded !== after.concluded;

/** Terms (or a settlement) compared by their wire form: the form subscribers hold. */
const same = <T>(a: T | undefined, b: T | undefined, toWire: (x: T) => object): boolean =>
  (a === undefined) === (b === undefined) && (a === undefined || JSON.stringify(toWire(a)) === JSON.stringify(toWire(b!)));

function marketFrames(broadcaster: Broadcaster, before: Market | undefined, after: Market): void {
  const recallMoved = before !== undefined && before.recalled !== after.recalled;
  if (stateMoved(before, after) || recallMoved || !same(before!.terms, after.terms, termsToWire)) broadcaster.publishState(stateFrame(after.id, after));
  for (const n of after.nested ?? []) {
    // A nested market is recalled with its player race: its own subscribers, who may not hold the race, are told too.
    if (recallMoved || stateMoved(before?.nested?.find((x) => x.id === n.id), n)) broadcaster.publishState(stateFrame(n.id, { ...n, recalled: after.recalled }));
  }
}

const unsettled = (r: MarketResult): boolean => r.outcome === '' && !r.recalled && !r.abandoned;

function resultChanged(before: MarketResult | undefined, after: MarketResult): boolean {
  if (!before) return !unsettled(after) || after.settlement !== undefined;
  return before.outcome !== after.outcome || before.recalled !== after.recalled || before.abandoned !== after.abandoned || !same(before.settlement, after.settlement, settlementToWire);
}

/**
 * The markets a change brings to the sockets whose event or sport filters cover them, with their
 * event and sport: a new market (and new nested ones), one reopened after it concluded (a
 * settlement rolled back), or one whose terms moved (a filter on its country or turning in play
 * may now cover it).
 */
function appearing(before: Market | undefined, after: Market): [string, number, number][] {
  if (after.concluded) return [];
  const { id, eventId, sportId } = after;
  const out: [string, number, number][] = [];
  if (!before || before.concluded || !same(before.terms, after.terms, termsToWire)) out.push([id, eventId, sportId]);
  for (const n of after.nested ?? []) if (!n.concluded && !before?.nested?.some((x) => x.id === n.id)) out.push([n.id, eventId, sportId]);
  return out;
}

/** The sockets' markets, told which appeared and which concluded (hub/socket-subscriptions.ts). */
export interface SocketMarkets {
  /** A market that appeared and is not concluded: the sockets whose event or sport filters cover it take it. */
  appeared(mid: string, eid: number, si: number): void;
  /** Markets that concluded: every socket that takes them loses them, and is told. */
  concluded(mids: readonly string[]): void;
}

/**
 * Turns committed reference changes into frames for subscribers: `market`
 * when state or terms move, `result` when a result appears or changes, and, once a
 * market concludes, `unsubscribed` after its final frames; a new market (or one
 * reopened) goes to the sockets whose filters cover it. Driven by the read
 * model's refresh (targeted after NOTIFY, or a full reload compared with what
 * it replaced), so every pod tells its own sockets and nothing is silent. The
 * first load is a change from an empty model: every market's state, and every
 * result that says something, is published then, to no socket (none opens
 * before the model is loaded), and kept as where each market stands for
 * sockets that take it later (hub/states.ts), after a restart as before.
 */
export class ReferenceFrames {
  constructor(
    private readonly broadcaster: Broadcaster,
    private readonly sockets: SocketMarkets,
  ) {}

  changed(changes: readonly ModelChange[]): void {
    const { broadcaster, sockets } = this;
    const appeared: [string, number, number][] = [];
    const concluded: string[] = [];
    for (const c of changes) {
      if (c.kind === 'result') {
        if (c.after && resultChanged(c.before, c.after)) broadcaster.publishState(resultFrame(c.after));
        else if (!c.after) broadcaster.forgetState(c.before!.marketId);
      } else if (c.after) {
        marketFrames(broadcaster, c.before, c.after);
        appeared.push(...appearing(c.before, c.after));
        if (c.after.concluded && !c.before?.concluded) concluded.push(c.after.id, ...(c.after.nested ?? []).map((n) => n.id));
      } else if (c.before) {
        broadcaster.forgetState(c.before.id);
        for (const n of c.before.nested ?? []) broadcaster.forgetState(n.id);
      }
    }
    // After every frame of the batch: a socket taking a market is sent where it stands now (a
    // reopened market its rollback, not the settlement the same batch took back), and a settling
    // market's result reaches its subscribers before they lose it.
    for (const [mid, eid, si] of appeared) sockets.appeared(mid, eid, si);
    if (concluded.length) sockets.concluded(concluded);
  }
}
