import type { ModelChange } from '../refdata/model.js';
import type { Market, MarketResult } from '../refdata/types.js';
import type { Broadcaster } from './broadcaster.js';

function marketFrames(broadcaster: Broadcaster, before: Market | undefined, after: Market): void {
  if (!before || before.s !== after.s || before.go !== after.go || before.rt !== after.rt) {
    broadcaster.publishToMarket(after.mid, { op: 'market', mid: after.mid, s: after.s, go: after.go, rt: after.rt });
  }
  for (const n of after.m ?? []) {
    const old = before?.m?.find((x) => x.mid === n.mid);
    if (!old || old.s !== n.s || old.go !== n.go) broadcaster.publishToMarket(n.mid, { op: 'market', mid: n.mid, s: n.s, go: n.go, rt: after.rt });
  }
}

function resultFrame(broadcaster: Broadcaster, before: MarketResult | undefined, after: MarketResult): void {
  const unchanged = before ? before.res === after.res && before.rt === after.rt && before.ia === after.ia : after.res === '' && !after.rt && !after.ia;
  if (!unchanged) broadcaster.publishToMarket(after.mid, { op: 'result', mid: after.mid, mt: after.mt, res: after.res, rt: after.rt, ia: after.ia });
}

/**
 * Turns committed reference changes into frames for subscribers: `market`
 * when state moves, `result` when a result appears or changes, and, once a
 * market concludes, `unsubscribed` after its final frames. Driven by the read
 * model's NOTIFY refresh, so every pod tells its own sockets.
 */
export function stateFrames(broadcaster: Broadcaster): (changes: ModelChange[]) => void {
  return (changes) => {
    const concluded: string[] = [];
    for (const c of changes) {
      if (c.kind === 'result') {
        if (c.after) resultFrame(broadcaster, c.before, c.after);
      } else if (c.after) {
        marketFrames(broadcaster, c.before, c.after);
        if (c.after.go && c.before && !c.before.go) concluded.push(c.after.mid, ...(c.after.m ?? []).map((n) => n.mid));
      }
    }
    // After every frame of the batch, so a settling market's result reaches its subscribers first.
    if (concluded.length) broadcaster.detachEverywhere(concluded);
  };
}
