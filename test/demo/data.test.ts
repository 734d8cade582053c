import t from 'tap';
import { http, startTestService } from '../helpers/service.js';
import { MARKET_TYPES } from '../../src/refdata/types.js';

/** The demo set as a user meets it after `npm start`: through REST. */
type Obj = Record<string, unknown>;
const svc = await startTestService(t);
const sports = (await http<Obj[]>(svc.url, '/api/v1/sports')).body;
const byId = (await http<{ data: Record<string, Obj[]> }>(svc.url, `/api/v1/sports/events?si=${sports.map((s) => s.si).join(',')}`)).body.data;
const events = Object.values(byId).flat();
const markets: Obj[] = [];
for (let i = 0; i < events.length; i += 50) {
  const r = await http<{ data: Record<string, Obj[]> }>(svc.url, `/api/v1/events/markets?eid=${events.slice(i, i + 50).map((e) => e.eid).join(',')}`);
  markets.push(...Object.values(r.body.data).flat());
}
const results: Obj[] = [];
for (let i = 0; i < markets.length; i += 50) {
  results.push(...(await http<Obj[]>(svc.url, `/api/v1/markets/result?mid=${markets.slice(i, i + 50).map((m) => m.mid).join(',')}`)).body);
}

t.test('cricket, soccer, tennis and horse racing, each with events', async (t) => {
  for (const name of ['Cricket', 'Soccer', 'Tennis', 'Horse Racing']) {
    const sport = sports.find((s) => s.na === name);
    t.ok(sport, name);
    t.ok(byId[String(sport?.si)]?.length > 0, `${name} has events`);
  }
});

t.test('events across several leagues, some in play, some concluded, with and without tv', async (t) => {
  t.ok(new Set(events.map((e) => e.li)).size >= 6);
  t.ok(events.some((e) => e.ip === true));
  t.ok(events.some((e) => e.go === true));
  t.ok(events.some((e) => typeof e.tv === 'string' && /<iframe/.test(e.tv)));
  t.ok(events.some((e) => e.tv === null));
});

t.test('every market type of the REST contract, player-race included', async (t) => {
  const types = new Set(markets.map((m) => m.ty));
  for (const ty of MARKET_TYPES) t.ok(types.has(ty), ty);
});

t.test('results of every kind: runner ID, run count, back/lay, abandoned, recalled, unsettled', async (t) => {
  const runnerIds = new Set(markets.flatMap((m) => ((m.r as Obj[]) ?? []).map((r) => String(r.rid))));
  const byMid = new Map(markets.map((m) => [m.mid, m]));
  t.ok(results.some((r) => runnerIds.has(r.res as string)), 'a runner ID');
  t.ok(results.some((r) => byMid.get(r.mid)?.ty === 'session' && /^\d+$/.test(r.res as string)), 'a run count on a session');
  t.ok(results.some((r) => r.res === 'back'), 'back');
  t.ok(results.some((r) => r.res === 'lay'), 'lay');
  t.ok(results.some((r) => r.ia === true), 'abandoned');
  t.ok(results.some((r) => r.rt === true), 'recalled');
  t.ok(results.some((r) => r.res === '' && r.rt === false && r.ia === false), 'unsettled');
});

t.test('info comments: null on some markets, a value on one, absent on the rest', async (t) => {
  t.ok(markets.some((m) => 'if' in m && m.if === null));
  t.ok(markets.some((m) => typeof m.if === 'string'));
  t.ok(markets.some((m) => !('if' in m)));
});
