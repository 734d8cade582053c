import type { ModelChange } from '../refdata/model.js';
import type { Market, MarketResult, NestedMarket } from '../refdata/types.js';
import type { MarketStateMessage, ResultMessage } from '../odds/messages.js';
import type { Broadcaster } from '../hub/broadcaster.js';

/** The frames' wire keys are the REST keys of the market and the result (docs/protocol.md). */
const stateFrame = (mid: string, state: Pick<Market, 'isActive' | 'concluded' | 'recalled'>): MarketStateMessage =>
  ({ op: 'market', mid, s: state.isActive, go: state.concluded, rt: state.recalled });

const resultFrame = (r: MarketResult): ResultMessage =>
  ({ op: 'result', mid: r.marketId, mt: r.marketType, res: r.outcome, rt: r.recalled, ia: r.abandoned });

const stateMoved = (before: Market | NestedMarket | undefined, after: Market | NestedMarket): boolean =>
  !before || before.isActive !== after.isActive || before.concluded !== after.concluded;

function marketFrames(bc: Broadcaster, before: Market | undefined, after: Market): void {
  if (stateMoved(before, after) || before!.recalled !== after.recalled) bc.publishState(stateFrame(after.id, after));
  for (const n of after.nested ?? []) {
    // A nested market is recalled with its player race.
    if (stateMoved(before?.nested?.find((x) => x.id === n.id), n)) bc.publishState(stateFrame(n.id, { ...n, recalled: after.recalled }));
  }
}

const unsettled = (r: MarketResult): boolean => r.outcome === '' && !r.recalled && !r.abandoned;

function resultChanged(before: MarketResult | undefined, after: MarketResult): boolean {
  return before ? before.outcome !== after.outcome || before.recalled !== after.recalled || before.abandoned !== after.abandoned : !unsettled(after);
}

/** Who takes markets, told which appeared and which concluded (hub/socket-subscriptions.ts). */
export interface MarketTakers {
  /** A market that appeared and is not concluded: the sockets whose event or sport filters cover it take it. */
  appeared(mid: string, eid: number, si: number): void;
  /** Markets that concluded: every socket that takes them loses them, and is told. */
  concluded(mids: readonly string[]): void;
}

/**
 * Turns committed reference changes into frames for subscribers: `market`
 * when state moves, `result` when a result appears or changes, and, once a
 * market concludes, `unsubscribed` after its final frames; a new market goes
 * to the sockets whose filters cover it. Driven by the read
 * model's refresh (targeted after NOTIFY, or a full reload compared with what
 * it replaced), so every pod tells its own sockets and nothing is silent.
 */
export class ReferenceFrames {
  constructor(
    private readonly bc: Broadcaster,
    private readonly takers: MarketTakers,
  ) {}

  changed(changes: readonly ModelChange[]): void {
    const { bc, takers } = this;
    const concluded: string[] = [];
    for (const c of changes) {
      if (c.kind === 'result') {
        if (c.after && resultChanged(c.before, c.after)) bc.publishState(resultFrame(c.after));
        else if (!c.after) bc.forgetState(c.before!.marketId);
      } else if (c.after) {
        const { id, eventId, sportId } = c.after;
        marketFrames(bc, c.before, c.after);
        // New markets (and new nested ones) reach the sockets whose event or sport filters cover them.
        if (!c.after.concluded) {
          if (!c.before) takers.appeared(id, eventId, sportId);
          for (const n of c.after.nested ?? []) {
            if (!n.concluded && !c.before?.nested?.some((x) => x.id === n.id)) takers.appeared(n.id, eventId, sportId);
          }
        }
        if (c.after.concluded && !c.before?.concluded) concluded.push(id, ...(c.after.nested ?? []).map((n) => n.id));
      } else if (c.before) {
        bc.forgetState(c.before.id);
        for (const n of c.before.nested ?? []) bc.forgetState(n.id);
      }
    }
    // After every frame of the batch, so a settling market's result reaches its subscribers first.
    if (concluded.length) takers.concluded(concluded);
  }
}
