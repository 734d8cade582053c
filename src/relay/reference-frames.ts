import type { ModelChange } from '../refdata/model.js';
import type { Market, MarketResult } from '../refdata/types.js';
import type { Broadcaster } from '../hub/broadcaster.js';

function marketFrames(bc: Broadcaster, before: Market | undefined, after: Market): void {
  if (!before || before.s !== after.s || before.go !== after.go || before.rt !== after.rt) {
    bc.publishState({ op: 'market', mid: after.mid, s: after.s, go: after.go, rt: after.rt });
  }
  for (const n of after.m ?? []) {
    const old = before?.m?.find((x) => x.mid === n.mid);
    if (!old || old.s !== n.s || old.go !== n.go) bc.publishState({ op: 'market', mid: n.mid, s: n.s, go: n.go, rt: after.rt });
  }
}

function resultFrame(bc: Broadcaster, before: MarketResult | undefined, after: MarketResult): void {
  const unchanged = before ? before.res === after.res && before.rt === after.rt && before.ia === after.ia : after.res === '' && !after.rt && !after.ia;
  if (!unchanged) bc.publishState({ op: 'result', mid: after.mid, mt: after.mt, res: after.res, rt: after.rt, ia: after.ia });
}

/** Told of each market that appeared and is not concluded: the sockets whose event or sport filters cover it take it. */
export interface NewMarkets {
  appeared(mid: string, eid: number, si: number): void;
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
    private readonly filters: NewMarkets,
  ) {}

  changed(changes: readonly ModelChange[]): void {
    const { bc, filters } = this;
    const concluded: string[] = [];
    for (const c of changes) {
      if (c.kind === 'result') {
        if (c.after) resultFrame(bc, c.before, c.after);
        else bc.forgetState(c.before!.mid);
      } else if (c.after) {
        const { mid, eid, si } = c.after;
        marketFrames(bc, c.before, c.after);
        // New markets (and new nested ones) reach the sockets whose event or sport filters cover them.
        if (!c.after.go) {
          if (!c.before) filters.appeared(mid, eid, si);
          for (const n of c.after.m ?? []) if (!n.go && !c.before?.m?.some((x) => x.mid === n.mid)) filters.appeared(n.mid, eid, si);
        }
        if (c.after.go && !c.before?.go) concluded.push(mid, ...(c.after.m ?? []).map((n) => n.mid));
      } else if (c.before) {
        bc.forgetState(c.before.mid);
        for (const n of c.before.m ?? []) bc.forgetState(n.mid);
      }
    }
    // After every frame of the batch, so a settling market's result reaches its subscribers first.
    if (concluded.length) bc.detachEverywhere(concluded);
  }
}
