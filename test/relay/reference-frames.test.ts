import t from 'tap';
import { ReferenceFrames } from '../../src/relay/reference-frames.js';
import type { Broadcaster } from '../../src/hub/broadcaster.js';
import type { ServerMessage } from '../../src/odds/messages.js';
import type { Market, MarketResult } from '../../src/refdata/types.js';

/** What the broadcaster and the market takers were asked to do, in order. */
function recorder() {
  const calls: unknown[] = [];
  const appeared: [string, number, number][] = [];
  const bc = {
    publishState: (msg: ServerMessage) => calls.push(msg),
    forgetState: (mid: string) => calls.push(['forget', mid]),
  } as unknown as Broadcaster;
  const frames = new ReferenceFrames(bc, {
    appeared: (mid, eid, si) => void appeared.push([mid, eid, si]),
    concluded: (mids) => void calls.push(['detach', mids]),
  });
  return { calls, appeared, frames: (changes: Parameters<ReferenceFrames['changed']>[0]) => frames.changed(changes) };
}

const market = (over: Partial<Market> = {}): Market =>
  ({ id: '1.1', eventId: 7, name: 'Match Odds', sportId: 4, isActive: true, concluded: false, type: 'match-odd', recalled: false, ...over });
const race = (over: Partial<Market> = {}, nested = [{ isActive: true, concluded: false }]): Market => market({
  id: '1.2', type: 'player-race', ...over,
  nested: nested.map((n, i) => ({ id: `1.2.${i + 1}`, runners: [], info: null, ...n })),
});
const result = (over: Partial<MarketResult> = {}): MarketResult =>
  ({ marketId: '1.1', marketType: 'match-odd', outcome: '', recalled: false, abandoned: false, ...over });

t.test('a new market: its state with the REST keys, and the sockets whose filters cover it are told', async (t) => {
  const r = recorder();
  r.frames([{ kind: 'market', after: race() }]);
  t.same(r.calls, [
    { op: 'market', mid: '1.2', s: true, go: false, rt: false },
    { op: 'market', mid: '1.2.1', s: true, go: false, rt: false },
  ]);
  t.same(r.appeared, [['1.2', 7, 4], ['1.2.1', 7, 4]]);
});

t.test('a market frame only when active, concluded or recalled moves; a nested market carries its race\'s recall, told when it moves', async (t) => {
  const r = recorder();
  r.frames([{ kind: 'market', before: market(), after: market({ name: 'renamed' }) }]);
  t.same(r.calls, [], 'a new name is no state');
  r.frames([{ kind: 'market', before: race(), after: race({ recalled: true }) }]);
  t.same(r.calls, [{ op: 'market', mid: '1.2', s: true, go: false, rt: true }, { op: 'market', mid: '1.2.1', s: true, go: false, rt: true }],
    'the recall, on the race and on its nested market, whose subscribers may not hold the race');
  r.calls.length = 0;
  r.frames([{ kind: 'market', before: race({ recalled: true }), after: race({ recalled: true }, [{ isActive: false, concluded: false }]) }]);
  t.same(r.calls, [{ op: 'market', mid: '1.2.1', s: false, go: false, rt: true }]);
  t.same(r.appeared, []);
});

t.test('a result frame when a result appears or changes, never for a new unsettled one', async (t) => {
  const r = recorder();
  r.frames([{ kind: 'result', after: result() }]);
  t.same(r.calls, []);
  r.frames([{ kind: 'result', before: result(), after: result({ outcome: '101', abandoned: true }) }]);
  r.frames([{ kind: 'result', before: result({ outcome: '101', abandoned: true }), after: result({ outcome: '101', abandoned: true }) }]);
  r.frames([{ kind: 'result', before: result() }]);
  t.same(r.calls, [{ op: 'result', mid: '1.1', mt: 'match-odd', res: '101', rt: false, ia: true }, ['forget', '1.1']]);
});

t.test('a market that concludes is detached, nested markets with it, after every frame of the batch', async (t) => {
  const r = recorder();
  r.frames([
    { kind: 'market', before: race(), after: race({ concluded: true }) },
    { kind: 'result', before: result({ marketId: '1.2.1' }), after: result({ marketId: '1.2.1', outcome: '5' }) },
  ]);
  t.same(r.calls.at(-1), ['detach', ['1.2', '1.2.1']]);
  t.equal(r.calls.length, 3, 'the state, the result, then the detach');
  t.same(r.appeared, [], 'a concluded market reaches no filter');
});

t.test('a market gone from the model is forgotten, nested ones too', async (t) => {
  const r = recorder();
  r.frames([{ kind: 'market', before: race() }]);
  t.same(r.calls, [['forget', '1.2'], ['forget', '1.2.1']]);
});

t.test('terms: a market frame whenever they change, carrying them; a nested market carries none', async (t) => {
  const r = recorder();
  const terms = { betDelay: 0, turnInPlay: true, runners: [{ runnerId: 1, status: 'ACTIVE' as const, adjustmentFactor: 26.3 }] };
  r.frames([{ kind: 'market', before: market(), after: market({ terms }) }]);
  r.frames([{ kind: 'market', before: market({ terms }), after: market({ terms: { ...terms } }) }]);
  const moved = { ...terms, betDelay: 5, runners: [{ runnerId: 1, status: 'REMOVED' as const, adjustmentFactor: 26.3, removedAt: 9 }] };
  r.frames([{ kind: 'market', before: market({ terms }), after: market({ terms: moved }) }]);
  r.frames([{ kind: 'market', before: market({ terms: moved }), after: market() }]);
  t.same(r.calls, [
    { op: 'market', mid: '1.1', s: true, go: false, rt: false, terms: { bd: 0, tip: true, r: [{ rid: 1, st: 'ACTIVE', af: 26.3 }] } },
    { op: 'market', mid: '1.1', s: true, go: false, rt: false, terms: { bd: 5, tip: true, r: [{ rid: 1, st: 'REMOVED', af: 26.3, rd: 9 }] } },
    { op: 'market', mid: '1.1', s: true, go: false, rt: false },
  ], 'given, unchanged (no frame), moved, gone');
  r.calls.length = 0;
  r.frames([{ kind: 'market', before: race(), after: race({ terms }) }]);
  t.same(r.calls, [{ op: 'market', mid: '1.2', s: true, go: false, rt: false, terms: { bd: 0, tip: true, r: [{ rid: 1, st: 'ACTIVE', af: 26.3 }] } }]);
});

t.test('a settlement: a result frame when only its certainty or a dead heat moves, and for a new market\'s settled result', async (t) => {
  const r = recorder();
  const settlement = { certainty: 'provisional' as const, runners: [{ runnerId: 1, status: 'WINNER' as const, deadHeat: 0.5 }, { runnerId: 2, status: 'WINNER' as const, deadHeat: 0.5 }] };
  r.frames([{ kind: 'result', after: result({ outcome: '1,2', settlement }) }]);
  r.frames([{ kind: 'result', before: result({ outcome: '1,2', settlement }), after: result({ outcome: '1,2', settlement: { ...settlement, certainty: 'confirmed' } }) }]);
  r.frames([{ kind: 'result', before: result({ outcome: '1,2', settlement: { ...settlement, certainty: 'confirmed' } }), after: result({ outcome: '1,2', settlement: { ...settlement, certainty: 'confirmed' } }) }]);
  const rs = [{ rid: 1, st: 'WINNER', dh: 0.5 }, { rid: 2, st: 'WINNER', dh: 0.5 }];
  t.same(r.calls, [
    { op: 'result', mid: '1.1', mt: 'match-odd', res: '1,2', rt: false, ia: false, cert: 'provisional', rs },
    { op: 'result', mid: '1.1', mt: 'match-odd', res: '1,2', rt: false, ia: false, cert: 'confirmed', rs },
  ]);
});

t.test('a market reopened after it concluded (its settlement rolled back) reaches the filters again', async (t) => {
  const r = recorder();
  r.frames([{ kind: 'market', before: market({ concluded: true }), after: market() }]);
  t.same(r.appeared, [['1.1', 7, 4]]);
});

t.test('markets reach the filters after every frame of their batch: a reopened market is taken with its rollback, not the settlement it undid', async (t) => {
  const order: unknown[] = [];
  const bc = { publishState: (msg: ServerMessage) => order.push(msg.op), forgetState: () => undefined } as unknown as Broadcaster;
  const frames = new ReferenceFrames(bc, { appeared: (mid) => void order.push(['appeared', mid]), concluded: () => undefined });
  frames.changed([
    { kind: 'market', before: market({ concluded: true }), after: market() },
    { kind: 'result', before: result({ outcome: '101' }), after: result({ outcome: '101', recalled: true }) },
  ]);
  t.same(order, ['market', 'result', ['appeared', '1.1']]);
});
