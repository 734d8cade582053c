import t from 'tap';
import { http, startTestService } from '../helpers/service.js';
import { seeded } from '../helpers/random.js';
import { Lifecycle } from '../../src/demo/lifecycle.js';
import { createLogger } from '../../src/log.js';

type Obj = Record<string, unknown>;
const svc = await startTestService(t);
const log = createLogger('error', false, () => undefined);

async function snapshot() {
  const sports = (await http<Obj[]>(svc.url, '/api/v1/sports')).body.map((s) => s.si).join(',');
  const events = Object.values((await http<{ data: Record<string, Obj[]> }>(svc.url, `/api/v1/sports/events?si=${sports}`)).body.data).flat();
  return new Map(events.map((e) => [e.eid as number, e]));
}

/** Lets NOTIFY catch up, since each step reads the model the previous step changed. */
const settle = () => new Promise((r) => setTimeout(r, 30));

t.test('over a match day every kind of change flows in through ingest', async (t) => {
  const before = await snapshot();
  const life = new Lifecycle({ model: svc.model, ingest: svc.ingest, log, random: seeded(11) });
  const batches: Obj[][] = [];
  for (let i = 0; i < 150; i++) {
    batches.push(await life.step());
    await settle();
  }
  const items = batches.flat();
  const after = await snapshot();
  t.ok(items.some((x) => x.kind === 'event' && x.ip === true), 'an event went in play');
  const kicked = items.filter((x) => x.kind === 'event' && x.ip === true).map((x) => after.get(x.eid as number)!);
  t.ok(kicked.every((e) => e.ip === true || e.go === true), 'and REST shows each in play or, later, concluded');
  t.ok(items.some((x) => x.kind === 'event' && x.go === true), 'an event concluded');
  t.ok(items.some((x) => x.kind === 'market' && x.s === false && x.go === undefined), 'a market suspended');
  t.ok(items.some((x) => x.kind === 'market' && x.s === true), 'a market resumed');
  t.ok(items.some((x) => x.kind === 'result' && /^\d+$/.test(String(x.res))), 'a market settled');
  t.ok(items.some((x) => x.kind === 'result' && x.rt === true), 'a result was recalled');
  t.ok(items.some((x) => x.kind === 'result' && x.ia === true), 'a market was abandoned');
  t.ok(after.size > before.size, 'new events appeared');
  const recalled = items.find((x) => x.kind === 'result' && x.rt === true)!;
  const r = await http<Obj[]>(svc.url, `/api/v1/markets/result?mid=${recalled.mid}`);
  t.equal(r.body[0].rt, true, 'a recall shows in REST');
});

t.test('markets another publisher feeds, and their events, are left alone', async (t) => {
  const markets = [...svc.model.allMarkets()];
  const theirs = new Set(svc.model.allEvents().filter((e) => e.eid % 2 === 0 && markets.some((m) => m.eid === e.eid)).map((e) => e.eid));
  const fed = new Set(markets.filter((m) => theirs.has(m.eid)).map((m) => m.mid));
  // One market per event is enough to make the whole event theirs.
  const claimed = new Set([...theirs].map((eid) => markets.find((m) => m.eid === eid)!.mid));
  const life = new Lifecycle({ model: svc.model, ingest: svc.ingest, log, random: seeded(12), fedElsewhere: (mid) => claimed.has(mid) });
  const items: Obj[] = [];
  for (let i = 0; i < 100; i++) {
    items.push(...await life.step());
    await settle();
  }
  t.ok(items.length > 50, `${items.length} items ingested`);
  t.same(items.filter((x) => theirs.has(x.eid as number) || fed.has(x.mid as string)), [], 'none touches them');
});
