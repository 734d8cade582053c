import t from 'tap';
import { demoItems } from '../../src/demo/data.js';
import type { DemoMarket } from '../../src/demo/markets.js';
import { settle, storyOf } from '../../src/demo/outcomes.js';
import type { Market } from '../../src/refdata/types.js';
import type { WireRunner } from '../../src/refdata/wire.js';
import { incoherent } from './coherence.js';

/**
 * Every result the demo could settle its richest fixtures with: the featured
 * cricket match (every cricket market type) and the featured soccer match
 * (four goal lines), each concluded under 400 different start times.
 */
const items = demoItems(new Date('2026-06-01T12:00:00Z'));
const runners = (r: WireRunner[]) => r.map((x) => ({ id: x.rid, name: x.na }));
/** The demo's market items as the read model would hold them once ingested. */
const marketsOf = (eid: number, si: number): Market[] =>
  items.filter((i): i is DemoMarket => i.kind === 'market' && i.eid === eid).map((m) => ({
    id: m.mid, eventId: m.eid, name: m.na, sportId: si, isActive: m.s, concluded: m.go, type: m.ty, recalled: m.rt,
    ...(m.r ? { runners: runners(m.r) } : {}),
    ...(m.m ? { nested: m.m.map((n) => ({ id: n.mid, isActive: n.s, concluded: n.go, runners: runners(n.r), info: n.if })) } : {}),
  }));

function conclude(eid: number, si: number, n: number) {
  const markets = marketsOf(eid, si).filter((m) => !m.concluded);
  return Array.from({ length: n }, (_, k) => {
    const st = new Date(Date.UTC(2026, 0, 1) + k * 3_600_000).toISOString();
    const story = storyOf(eid, st, si);
    const results = new Map(markets.flatMap((m) => settle(m, st, story)).map((r) => [r.mid as string, r]));
    return { st, story, markets, results, bad: incoherent(markets, results) };
  });
}

t.test('the featured cricket match: whatever the story, its results agree (ties included)', async (t) => {
  const runs = conclude(30000001, 4, 400);
  t.same(runs.flatMap((r) => r.bad.map((b) => `${r.st}: ${b}`)).slice(0, 10), []);
  t.ok(runs.some((r) => r.story.tie), 'some matches were tied');
  t.ok(runs.some((r) => !r.story.tie), 'most were not');
  const balls = new Set(runs.flatMap((r) => r.markets.filter((m) => m.type === 'ball-by-ball').map((m) => r.results.get(m.id)!.res)));
  t.ok(['0', '1', '4'].every((x) => balls.has(x)), `balls went for ${[...balls].sort().join(', ')}`);
});

t.test('the featured soccer match: goal lines, and the result, tell one score', async (t) => {
  const runs = conclude(30000011, 1, 400);
  t.same(runs.flatMap((r) => r.bad.map((b) => `${r.st}: ${b}`)).slice(0, 10), []);
  const odds = runs.map((r) => r.results.get('1.200011001')!.res);
  t.ok(odds.includes('9000') && odds.includes('1101') && odds.includes('1102'), 'home wins, away wins and draws');
});

t.test('the same fixture always ends the same way, so a repeated step settles alike', async (t) => {
  const [a, b] = [conclude(30000001, 4, 3), conclude(30000001, 4, 3)];
  t.same(a.map((r) => [...r.results]), b.map((r) => [...r.results]));
});
