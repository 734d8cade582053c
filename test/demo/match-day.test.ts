import t from 'tap';
import { startTestService } from '../helpers/service.js';
import { seeded } from '../helpers/random.js';
import { eventually } from '../helpers/wait.js';
import { MatchDay } from '../../src/demo/match-day.js';
import { SLOTS } from '../../src/demo/fixtures.js';
import { createLogger } from '../../src/log.js';
import type { Market } from '../../src/refdata/types.js';
import { eventToWire, marketToWire } from '../../src/refdata/wire.js';
import { incoherent } from './coherence.js';

/**
 * A simulated day of the demo's lifecycle against the real service: a clock
 * moved two minutes a step, each step's batch through ingest and Postgres,
 * and the next step only once the read model shows it (as a 5 s interval
 * would give it time to). The coherence rules are the tests' own (coherence.ts).
 */
type Obj = Record<string, unknown>;
const svc = await startTestService(t);
const log = createLogger('error', false, () => undefined);
const SPORTS = { 4: 'Cricket', 1: 'Soccer', 2: 'Tennis', 7: 'Horse Racing' } as const;
/** What the README and docs/ name: the featured events and markets must stay live, the settled examples as they are. */
const LIVE_EVENTS = [30000001, 30000011];
const LIVE_MARKETS = ['1.200001001', '1.200001002', '1.200001009'];
const SETTLED = ['1.200002001', '1.200003001', '1.200005001'];
const STEP_MS = 2 * 60_000;
const DAY_STEPS = (24 * 60 * 60_000) / STEP_MS;

const market = (mid: string): Market | undefined => [...svc.model.allMarkets()].find((m) => m.id === mid);
const result = (mid: string): Obj | undefined => {
  const json = svc.model.resultJson(mid);
  return json === undefined ? undefined : (JSON.parse(json) as Obj);
};

/** Whether the read model holds every key of every item of the batch, as REST answers it. */
function reflected(batch: Obj[]): boolean {
  const markets = new Map([...svc.model.allMarkets()].map((m) => [m.id, marketToWire(m) as unknown as Obj]));
  return batch.every((item) => {
    const { kind, ...keys } = item;
    const event = kind === 'event' ? svc.model.event(item.eid as number) : undefined;
    const held = kind === 'event' ? (event && (eventToWire(event) as unknown as Obj))
      : kind === 'market' ? markets.get(item.mid as string)
      : kind === 'terms' ? (svc.model.termsOf(item.mid as string)?.terms as Obj | undefined) : result(item.mid as string);
    // A terms item names its market by `mid`, which the terms themselves do not carry.
    return held !== undefined && Object.entries(keys).every(([k, v]) => ['r', 'if'].includes(k) || (kind === 'terms' && k === 'mid') || (k === 'st' ? Date.parse(held[k] as string) === Date.parse(v as string) : JSON.stringify(held[k]) === JSON.stringify(v)));
  });
}

t.test('a simulated day: every sport always has an in-play event with open markets, the documented IDs stay live, results agree', async (t) => {
  let clock = Date.now();
  const life = new MatchDay({ model: svc.model, ingest: svc.ingest, log, random: seeded(7), now: () => clock });
  const settledBefore = SETTLED.map((mid) => svc.model.resultJson(mid));
  const size = svc.model.size;
  const problems: string[] = [];
  const seen = { kickOffs: 0, conclusions: 0, relisted: new Set<string>(), sessionsMidMatch: 0, suspended: 0, resumed: 0 };
  for (let step = 0; step < DAY_STEPS; step++) {
    clock += STEP_MS;
    const before = new Map([...svc.model.allMarkets()].map((m) => [m.id, m]));
    const batch = await life.step();
    await eventually(async () => reflected(batch), Boolean, 10_000, 5);
    const at = `at ${new Date(clock).toISOString()}`;
    for (const [si, name] of Object.entries(SPORTS)) {
      const live = svc.model.allEvents().filter((e) => e.sportId === Number(si) && e.inPlay && !e.concluded);
      const open = [...svc.model.allMarkets()].some((m) => live.some((e) => e.id === m.eventId) && m.isActive && !m.concluded);
      if (!open) problems.push(`${at}: no ${name} event in play with an open market`);
    }
    for (const eid of LIVE_EVENTS) if (!svc.model.event(eid)?.inPlay || svc.model.event(eid)?.concluded) problems.push(`${at}: event ${eid} not in play`);
    for (const mid of LIVE_MARKETS) if (market(mid)?.concluded !== false) problems.push(`${at}: market ${mid} concluded`);
    const results = new Map(batch.filter((i) => i.kind === 'result').map((i) => [i.mid as string, i]));
    for (const e of batch.filter((i) => i.kind === 'event')) {
      if (e.ip === true) {
        seen.kickOffs++;
        const delays = batch.filter((i) => i.kind === 'terms' && before.get(i.mid as string)?.eventId === e.eid).map((i) => i.bd);
        if (!delays.length || delays.some((bd) => !((bd as number) > 0))) problems.push(`${at}: event ${e.eid} in play without a bet delay on its markets: ${JSON.stringify(delays)}`);
      }
      if (e.go === true) {
        seen.conclusions++;
        const markets = [...before.values()].filter((m) => m.eventId === e.eid && !m.concluded);
        problems.push(...incoherent(markets, results).map((p) => `${at}: event ${e.eid}: ${p}`));
      }
      if (typeof e.na === 'string') seen.relisted.add(`${e.eid} ${e.na}`);
    }
    const midMatch = batch.filter((i) => i.kind === 'result' && i.res !== '' && before.get(i.mid as string)?.type === 'session' && !batch.some((x) => x.kind === 'event' && x.go === true && x.eid === before.get(i.mid as string)?.eventId));
    for (const r of midMatch) {
      seen.sessionsMidMatch++;
      problems.push(...incoherent([before.get(r.mid as string)!], results).map((p) => `${at}: ${p}`));
    }
    seen.suspended += batch.filter((i) => i.kind === 'market' && i.s === false && i.go === undefined).length;
    seen.resumed += batch.filter((i) => i.kind === 'market' && i.s === true && i.na === undefined).length;
    if (problems.length > 20) break;
  }
  t.same(problems.slice(0, 20), [], 'no step broke a rule');
  t.same(SETTLED.map((mid) => svc.model.resultJson(mid)), settledBefore, 'the settled examples are as they were');
  t.ok(seen.kickOffs >= 10, `${seen.kickOffs} fixtures kicked off`);
  t.ok(seen.conclusions >= 10, `${seen.conclusions} concluded`);
  t.ok(seen.relisted.size >= 10, `${seen.relisted.size} fixtures listed anew in their slots`);
  t.ok(seen.sessionsMidMatch >= 2, `${seen.sessionsMidMatch} sessions settled during a match`);
  t.ok(seen.suspended > 50 && seen.resumed > 50, `${seen.suspended} suspensions, ${seen.resumed} markets opened`);
  t.same(svc.model.size, size, 'as many events, markets and results as at the start: slots are reused');
});

t.test('a featured event found concluded (data from an earlier version) is put back in play, its markets open and unsettled', async (t) => {
  const life = new MatchDay({ model: svc.model, ingest: svc.ingest, log, random: seeded(3) });
  const mid = '1.200011002';
  await svc.ingest.accept(svc.ingest.read([
    { kind: 'event', eid: 30000011, ip: false, go: true },
    { kind: 'market', mid, s: false, go: true },
    { kind: 'result', mid, res: '9011', rt: false, ia: false },
  ]));
  await eventually(async () => svc.model.event(30000011)?.concluded, Boolean);
  const batch = await life.step();
  await eventually(async () => reflected(batch), Boolean);
  t.match(svc.model.event(30000011), { inPlay: true, concluded: false });
  t.match(market(mid), { isActive: true, concluded: false });
  t.match(result(mid), { res: '', rt: false, ia: false });
});

t.test('markets another publisher feeds, and their events, are left alone', async (t) => {
  let clock = Date.now();
  const markets = [...svc.model.allMarkets()];
  // A featured event and every other fixture slot; one market each is enough to make the whole event theirs.
  const theirs = new Set([30000011, ...SLOTS.filter((_, i) => i % 2 === 0).map((s) => s.eid)]);
  const fed = new Set(markets.filter((m) => theirs.has(m.eventId)).flatMap((m) => [m.id, ...(m.nested ?? []).map((n) => n.id)]));
  const claimed = new Set([...theirs].map((eid) => markets.find((m) => m.eventId === eid)!.id));
  const life = new MatchDay({ model: svc.model, ingest: svc.ingest, log, random: seeded(12), now: () => clock, theirs: (mid) => claimed.has(mid) });
  const items: Obj[] = [];
  for (let step = 0; step < DAY_STEPS / 4; step++) {
    clock += STEP_MS;
    const batch = await life.step();
    await eventually(async () => reflected(batch), Boolean, 10_000, 5);
    items.push(...batch);
  }
  t.ok(items.length > 50, `${items.length} items ingested`);
  t.same(items.filter((x) => theirs.has(x.eid as number) || fed.has(x.mid as string)), [], 'none touches them');
});
