import t from 'tap';
import { eventually } from '../helpers/wait.js';
import { http, postJson, startTestService } from '../helpers/service.js';
import { sqlClient } from '../helpers/db.js';
import { Client } from '../helpers/ws.js';
import { Publisher } from '../faults/publisher-socket.js';
import type { ServerMessage } from '../../src/odds/messages.js';

type Obj = Record<string, unknown>;
type Reply = { status: number; message: string };
const svc = await startTestService(t);
const ingest = (...data: Obj[]) => postJson<Reply>(svc.url, '/api/v1/ingest', { data });

const events = (si: number) => http<{ data: Record<string, Obj[]> }>(svc.url, `/api/v1/sports/events?si=${si}`);
const markets = (eid: number) => http<{ data: Record<string, Obj[]> }>(svc.url, `/api/v1/events/markets?eid=${eid}`);
const result = (mid: string) => http<Obj[]>(svc.url, `/api/v1/markets/result?mid=${mid}`);

const SPORT = { kind: 'sport', si: 55, na: 'Darts', a: true };
const LEAGUE = { kind: 'league', li: 5501, si: 55, na: 'Premier League Darts' };
const EVENT = { kind: 'event', eid: 55000001, na: 'Price v Smith', st: '2030-01-01T19:00:00.000Z', go: false, ip: false, si: 55, li: 5501, tv: null };
const MARKET = { kind: 'market', mid: '5.55000001', eid: 55000001, na: 'Match Odds', ty: 'match-odd', s: true, go: false, rt: false, r: [{ rid: 1, na: 'Price' }, { rid: 2, na: 'Smith' }] };

t.test('sport, league, event and market items create rows that REST shows', async (t) => {
  const r = await ingest(SPORT, LEAGUE, EVENT, MARKET);
  t.same(r.body, { status: 1, message: 'Ingested 4 items' });
  const sports = await eventually(() => http<Obj[]>(svc.url, '/api/v1/sports'), (r) => r.body.some((s) => s.si === 55));
  t.same(sports.body.find((s) => s.si === 55), { si: 55, na: 'Darts', a: true });
  const ev = await eventually(() => events(55), (r) => r.body.data['55'].length > 0);
  t.same(ev.body.data['55'], [{ eid: 55000001, na: 'Price v Smith', le: 'Premier League Darts', st: '2030-01-01T19:00:00.000Z', go: false, ip: false, si: 55, li: 5501, tv: null }]);
  const mk = await eventually(() => markets(55000001), (r) => r.body.data['55000001'].length > 0);
  t.same(mk.body.data['55000001'], [{ mid: '5.55000001', eid: 55000001, na: 'Match Odds', si: 55, s: true, go: false, ty: 'match-odd', rt: false, r: [{ rid: 1, na: 'Price' }, { rid: 2, na: 'Smith' }] }]);
});

t.test('a partial event changes only the keys it carries', async (t) => {
  await ingest({ kind: 'event', eid: 55000001, ip: true, tv: '<iframe src="x"></iframe>' });
  const ev = await eventually(() => events(55), (r) => r.body.data['55'][0]?.ip === true);
  const { kind: _kind, ...rest } = EVENT;
  t.same(ev.body.data['55'][0], { ...rest, le: 'Premier League Darts', ip: true, tv: '<iframe src="x"></iframe>' });
});

t.test('market state and results reach REST and the market\'s subscribers as frames', async (t) => {
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: ['5.55000001'] });
  await ingest({ kind: 'market', mid: '5.55000001', s: false });
  t.same(await c.next((f) => f.op === 'market'), { op: 'market', mid: '5.55000001', s: false, go: false, rt: false });
  await ingest({ kind: 'result', mid: '5.55000001', res: '1', rt: false, ia: false });
  t.same(await c.next((f) => f.op === 'result'), { op: 'result', mid: '5.55000001', mt: 'match-odd', res: '1', rt: false, ia: false });
  const settled = await eventually(() => result('5.55000001'), (r) => r.body[0]?.res === '1');
  t.same(settled.body, [{ mid: '5.55000001', mt: 'match-odd', res: '1', rt: false, ia: false }]);
  const from = c.frames.length;
  await ingest({ kind: 'result', mid: '5.55000001', rt: true });
  t.same(await c.next((f) => f.op === 'result', 5000, from), { op: 'result', mid: '5.55000001', mt: 'match-odd', res: '1', rt: true, ia: false }, 'a recall keeps res and sets rt');
  const recalled = await eventually(() => result('5.55000001'), (r) => r.body[0]?.rt === true);
  t.equal(recalled.body[0].rt, true);
});

t.test('a market that concludes sends its final frames, then unsubscribed', async (t) => {
  await ingest({ kind: 'market', mid: '5.55000002', eid: 55000001, na: 'Most 180s', ty: 'other-market', s: true, go: false, rt: false });
  await eventually(() => markets(55000001), (r) => r.body.data['55000001'].length === 2);
  const c = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: ['5.55000002'] });
  await ingest({ kind: 'market', mid: '5.55000002', go: true, s: false }, { kind: 'result', mid: '5.55000002', res: 'Abandoned', ia: true });
  const bye = await c.next((f) => f.op === 'unsubscribed');
  const ops = c.frames.map((f) => f.op);
  t.same(bye, { op: 'unsubscribed', mids: ['5.55000002'] });
  t.ok(ops.indexOf('market') < ops.indexOf('unsubscribed') && ops.indexOf('result') < ops.indexOf('unsubscribed'), `order: ${ops.join(',')}`);
  t.same(c.frames.find((f) => f.op === 'result'), { op: 'result', mid: '5.55000002', mt: 'other-market', res: 'Abandoned', rt: false, ia: true });
});

t.test('a player-race market with nested markets, and ball-by-ball with bl', async (t) => {
  const r = await ingest(
    { kind: 'market', mid: '5.55000003', eid: 55000001, na: 'Top Checkout', ty: 'player-race', s: true, go: false, rt: false,
      m: [{ mid: '5.55000003.1', s: true, go: false, r: [{ rid: 1, na: 'Price' }, { rid: 2, na: 'Smith' }], if: null }] },
    { kind: 'market', mid: '5.55000004', eid: 55000001, na: 'Leg 1 Dart 1', ty: 'ball-by-ball', s: true, go: false, rt: false, bl: 1.1, di: 3 },
  );
  t.equal(r.status, 200);
  const mk = await eventually(() => markets(55000001), (r) => r.body.data['55000001'].length === 4);
  const race = mk.body.data['55000001'].find((m) => m.mid === '5.55000003')!;
  t.same(race.m, [{ mid: '5.55000003.1', s: true, go: false, r: [{ rid: 1, na: 'Price' }, { rid: 2, na: 'Smith' }], if: null }]);
  t.notOk('r' in race);
  const ball = mk.body.data['55000001'].find((m) => m.mid === '5.55000004')!;
  t.equal(ball.bl, 1.1);
  t.equal(ball.di, 3);
});

t.test('a player race recalled: a socket holding only one of its nested markets is told, its market frame carrying the recall', async (t) => {
  const RACE = '5.55000005';
  const NESTED = `${RACE}.1`;
  t.equal((await ingest({ kind: 'market', mid: RACE, eid: 55000001, na: 'Most 180s', ty: 'player-race', s: true, go: false, rt: false,
    m: [{ mid: NESTED, s: true, go: false, r: [{ rid: 1, na: 'Price' }, { rid: 2, na: 'Smith' }], if: null }] })).status, 200);
  const sub = await Client.connect(svc.url);
  t.teardown(() => sub.close());
  await sub.request({ op: 'subscribe', mids: [NESTED] });
  t.equal((await ingest({ kind: 'market', mid: RACE, rt: true })).status, 200);
  const told = await sub.next((f) => f.op === 'market' && f.mid === NESTED, 10_000);
  t.match(told, { op: 'market', mid: NESTED, s: true, go: false, rt: true }, 'told of the recall (it was not: its own state had not moved)');
});

t.test('the ingest rules are enforced, each refusal naming the item and field', async (t) => {
  const cases: [Obj, RegExp][] = [
    [{ ...MARKET, mid: '5.9', ty: 'coin-toss' }, /^item 0 \(market 5.9\): ty must be one of/],
    [{ ...MARKET, mid: '5.9', bl: 2.1 }, /bl is only allowed on a ball-by-ball market/],
    [{ ...MARKET, mid: '5.9', ty: 'player-race' }, /r is not allowed on a player-race market/],
    [{ ...MARKET, mid: '5.9', m: [] }, /m is only allowed on a player-race market/],
    [{ ...MARKET, mid: '5.9', eid: 99999999 }, /eid 99999999 does not exist in events/],
    [{ ...MARKET, mid: 'bad id' }, /mid must match/],
    [{ ...EVENT, eid: -1 }, /eid must be a positive integer/],
    [{ ...EVENT, eid: 56, st: 'tomorrow' }, /st must be an ISO 8601 date-time/],
    [{ ...EVENT, eid: 56, st: '2031-02-30T12:00:00.000Z' }, /st must be a date and time that exist: 2031-02-30T12:00:00.000Z does not/],
    [{ kind: 'event', eid: 57, ip: true }, /does not exist yet, and na, st, si, li are required to create it/],
    [{ kind: 'result', mid: 'no.such' }, /market no.such does not exist/],
    [{ kind: 'weather', mid: 'x' }, /kind must be one of/],
    [{ ...MARKET, mid: '5.9', r: [{ rid: 1, na: 'A' }, { rid: 1, na: 'B' }] }, /r\[1\].rid repeats runner 1/],
  ];
  for (const [item, says] of cases) {
    const r = await ingest(item);
    t.equal(r.status, 400, JSON.stringify(item).slice(0, 60));
    t.match(r.body.message, says);
  }
});

t.test('a batch with one bad item changes nothing', async (t) => {
  const c = await sqlClient(t, svc.databaseUrl);
  const count = async () => (await c.query(`SELECT (SELECT count(*) FROM sports) + (SELECT count(*) FROM events) + (SELECT count(*) FROM markets) AS n`)).rows[0].n;
  const before = await count();
  const r = await ingest({ kind: 'sport', si: 66, na: 'Snooker', a: true }, { kind: 'event', eid: 66000001, na: 'X', st: '2030-01-01T00:00:00Z', si: 66, li: 999999 });
  t.equal(r.status, 400);
  t.match(r.body.message, /^item 1 \(event 66000001\): li 999999 does not exist in leagues/);
  t.equal(await count(), before);
  t.notOk((await http<Obj[]>(svc.url, '/api/v1/sports')).body.some((s) => s.si === 66));
});

t.test('odds for a market acknowledged a moment ago are accepted at once (read your writes)', async (t) => {
  const refused: string[] = [];
  for (let i = 0; i < 10; i++) {
    const mid = `5.9900${i}`;
    const made = await ingest({ kind: 'market', mid, eid: 55000001, na: `Leg ${i}`, ty: 'other-market', s: true, go: false, rt: false });
    t.equal(made.status, 200);
    const odds = await ingest({ kind: 'odds', mid, ts: Date.now(), st: 'OPEN', ip: true, r: [] });
    if (odds.status !== 200) refused.push(`${mid}: ${odds.body.message}`);
  }
  t.same(refused, []);
});

t.test('a market keeps its type and its event: a change of either is refused, naming both, and the market stays as it was', async (t) => {
  const mid = '5.55000077';
  const race = '5.55000078';
  const nested = { mid: `${race}.1`, s: true, go: false, r: [{ rid: 1, na: 'Price' }] };
  const other = { kind: 'event', eid: 77000001, na: 'Other Sport Match', st: '2030-01-01T19:00:00.000Z', si: 77, li: 7701 };
  t.equal((await ingest(SPORT, LEAGUE, EVENT, { kind: 'sport', si: 77, na: 'Bandy', a: true }, { kind: 'league', li: 7701, si: 77, na: 'Bandy League' }, other,
    { ...MARKET, mid }, { kind: 'market', mid: race, eid: 55000001, na: 'Top Checkout', ty: 'player-race', m: [nested] })).status, 200);
  await ingest({ kind: 'result', mid, res: '1', rs: [{ rid: 1, st: 'WINNER' }, { rid: 2, st: 'LOSER' }] });
  const before = (await markets(55000001)).body.data['55000001'].filter((m) => m.mid === mid || m.mid === race);
  const refusals: [Obj, string][] = [
    [{ kind: 'market', mid, ty: 'player-race' }, `item 0 (market ${mid}): ty player-race would change the type of market ${mid} (match-odd): a market's type never changes; a market of another type needs its own mid`],
    [{ kind: 'market', mid: race, ty: 'match-odd' }, `item 0 (market ${race}): ty match-odd would change the type of market ${race} (player-race): a market's type never changes; a market of another type needs its own mid`],
    [{ kind: 'market', mid, eid: 77000001 }, `item 0 (market ${mid}): eid 77000001 would move market ${mid} from event 55000001: a market stays in the event it was created in; a market of another event needs its own mid`],
    [{ kind: 'market', mid, eid: 55000002 }, `item 0 (market ${mid}): eid 55000002 would move market ${mid} from event 55000001: a market stays in the event it was created in; a market of another event needs its own mid`],
  ];
  await ingest({ ...EVENT, eid: 55000002, na: 'Smith v Price' });
  for (const [item, message] of refusals) {
    const r = await ingest(item);
    t.equal(r.status, 400, JSON.stringify(item));
    t.equal(r.body.message, message);
  }
  t.same((await markets(55000001)).body.data['55000001'].filter((m) => m.mid === mid || m.mid === race), before, 'runners, nested markets and event as they were');
  t.same((await markets(77000001)).body.data['77000001'], [], 'nothing moved to the other sport\'s event');
  t.match((await result(mid)).body, [{ mid, mt: 'match-odd', res: '1' }], 'its result, and its type, as they were');
  t.equal((await ingest({ ...MARKET, mid, s: false })).status, 200, 'restating its type and event is no change of them');
});

t.test('an event keeps its sport and its league is one of that sport; a league keeps its sport: refused, naming both, nothing moved', async (t) => {
  const other = [{ kind: 'sport', si: 78, na: 'Floorball', a: true }, { kind: 'league', li: 7801, si: 78, na: 'Floorball League' }];
  const eid = 55000003;
  t.equal((await ingest(SPORT, LEAGUE, ...other, { ...EVENT, eid, na: 'Wright v Cross' }, { ...MARKET, mid: '5.55000081', eid })).status, 200);
  const before = (await events(55)).body.data['55'].find((e) => e.eid === eid);
  const refusals: [Obj[], string][] = [
    [[{ kind: 'event', eid, si: 78 }], `item 0 (event ${eid}): si 78 would move event ${eid} from sport 55: an event stays in the sport it was created in (its markets with it); an event of another sport needs its own eid`],
    [[{ kind: 'event', eid, si: 78, li: 7801 }], `item 0 (event ${eid}): si 78 would move event ${eid} from sport 55: an event stays in the sport it was created in (its markets with it); an event of another sport needs its own eid`],
    [[{ kind: 'event', eid, li: 7801 }], `item 0 (event ${eid}): li 7801 is a league of sport 78, not of the event's sport 55: an event's league is one of its sport`],
    [[{ ...EVENT, eid: 55000004, li: 7801 }], `item 0 (event 55000004): li 7801 is a league of sport 78, not of the event's sport 55: an event's league is one of its sport`],
    [[{ kind: 'league', li: 5501, si: 78 }], 'item 0 (league 5501): si 78 would move league 5501 from sport 55: a league stays in the sport it was created in (its events with it); a league of another sport needs its own li'],
  ];
  for (const [items, message] of refusals) {
    const r = await ingest(...items);
    t.equal(r.status, 400, JSON.stringify(items));
    t.equal(r.body.message, message);
  }
  t.same((await events(55)).body.data['55'].find((e) => e.eid === eid), before, 'the event as it was, in its sport and league');
  t.same((await events(78)).body.data['78'], [], 'nothing moved to the other sport');
  t.equal((await ingest({ kind: 'league', li: 5501, si: 55, na: 'Premier League Darts' }, { kind: 'event', eid, si: 55, li: 5501 })).status, 200, 'restating them is no change');
});

t.test('a line\'s range and step (lmin, lmax, lint) only on a line market; a handicap only on a runner: refused, nothing written', async (t) => {
  const mid = '5.55000079';
  t.equal((await ingest({ ...MARKET, mid }, { kind: 'market', mid: '5.55000080', eid: 55000001, na: 'Total 180s', ty: 'line-market' })).status, 200);
  const terms = () => http<Obj[]>(svc.url, `/api/v1/markets/terms?mid=${mid}`);
  const held = (await terms()).body;
  for (const [item, message] of [
    [{ kind: 'terms', mid, bd: 5, lmin: 0, lmax: 100, lint: 0.5 }, `item 0 (terms ${mid}): lmin, lmax, lint are only for line markets (session, ball-by-ball, odd-even, khadometer, line-market, other-market); market ${mid} is match-odd`],
    [{ kind: 'terms', mid, hc: -1.5 }, `item 0 (terms ${mid}): hc is a runner's handicap, not a market's term: give it in r, as r[i].hc`],
  ] as const) {
    const r = await ingest(item);
    t.equal(r.status, 400, JSON.stringify(item));
    t.equal(r.body.message, message);
  }
  t.same((await terms()).body, held, 'not even the bet delay beside them was written');
  t.equal((await ingest({ kind: 'terms', mid: '5.55000080', lmin: 0, lmax: 30, lint: 1 })).status, 200, 'a line market takes them');
  t.equal((await ingest({ kind: 'terms', mid, lmin: null, bd: 5 })).status, 200, 'clearing them is taken anywhere');
});

/** The last frame of `op` for `mid` the socket was sent before the answer to a ping sent now: frames on one socket are ordered. */
async function lastSentBefore(c: Client, op: 'market' | 'result', mid: string): Promise<ServerMessage | undefined> {
  const id = c.send({ op: 'ping' });
  const pong = await c.next((f) => f.op === 'ack' && f.id === id);
  return c.frames.slice(0, c.frames.indexOf(pong)).filter((f) => f.op === op && f.mid === mid).at(-1);
}

t.test('read your writes: after each ack, the same pod\'s REST answer and the market\'s subscribers already have the change, 40 of 40, over REST and /ingest', async (t) => {
  const mid = '5.55000010';
  t.equal((await ingest({ kind: 'market', mid, eid: 55000001, na: 'Leg Winner', ty: 'other-market', s: true, go: false, rt: false })).status, 200);
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [mid] });
  const pub = await Publisher.open(svc.url);
  t.teardown(() => pub.close());
  /** Sends on REST for even i, on the /ingest socket for odd i, and resolves with the ack's status. */
  const send = async (i: number, item: Obj): Promise<number> => {
    if (i % 2 === 0) return (await ingest(item)).body.status;
    pub.send(i, [item]);
    return (await pub.ack(i)).status;
  };
  const behind: string[] = [];
  for (let i = 0; i < 40; i++) {
    // Suspend and resume in turn; over each path in turn, so both see both values.
    const s = Math.floor(i / 2) % 2 === 1;
    t.equal(await send(i, { kind: 'market', mid, s }), 1);
    const rest = (await markets(55000001)).body.data['55000001'].find((m) => m.mid === mid)?.s;
    const frame = await lastSentBefore(c, 'market', mid);
    if (rest !== s || (frame as { s?: boolean } | undefined)?.s !== s) behind.push(`write ${i} (s ${s}): REST s ${rest}, last market frame ${JSON.stringify(frame)}`);
  }
  t.same(behind, [], '40 of 40 current');
  for (let i = 40; i < 80; i++) {
    const res = String(i % 4 < 2 ? 1 : 2);
    t.equal(await send(i, { kind: 'result', mid, res, rt: false, ia: false }), 1);
    const rest = (await result(mid)).body[0]?.res;
    const frame = await lastSentBefore(c, 'result', mid);
    if (rest !== res || (frame as { res?: string } | undefined)?.res !== res) behind.push(`result ${i} (res ${res}): REST res ${rest}, last result frame ${JSON.stringify(frame)}`);
  }
  t.same(behind, [], '40 of 40 results current');
});

t.test('read your writes for a batch of several rows: after its ack the pod shows every one of them, not its first alone, 20 of 20', async (t) => {
  const behind: string[] = [];
  for (let i = 0; i < 20; i++) {
    const si = 600 + i, li = 60001 + i, eid = 56000001 + i, mid = `5.${eid}`;
    const r = await ingest(
      { kind: 'sport', si, na: `Sport ${i}`, a: true },
      { kind: 'league', li, si, na: `League ${i}` },
      { kind: 'event', eid, na: `Event ${i}`, st: '2030-01-01T19:00:00.000Z', si, li },
      { kind: 'market', mid, eid, na: 'Match Odds', ty: 'match-odd', r: [{ rid: 1, na: 'Home' }, { rid: 2, na: 'Away' }] },
    );
    t.same(r.body, { status: 1, message: 'Ingested 4 items' });
    // Read at once, no waiting: the ack said the pod shows them.
    const event = (await events(si)).body.data?.[String(si)]?.some((e) => e.eid === eid);
    const market = (await markets(eid)).body.data?.[String(eid)]?.some((m) => m.mid === mid);
    if (!event || !market) behind.push(`batch ${i}: event shown ${event}, market shown ${market}`);
  }
  t.same(behind, [], '20 of 20 batches shown whole after their ack');
});

t.test('an acknowledged write survives a restart of the service', async (t) => {
  await ingest({ kind: 'event', eid: 55000001, na: 'Price v Smith (final)' });
  await svc.close();
  const again = await startTestService(t, {}, svc.databaseUrl);
  const ev = await http<{ data: Record<string, Obj[]> }>(again.url, '/api/v1/sports/events?si=55');
  t.equal(ev.body.data['55'][0].na, 'Price v Smith (final)');
  const res = await http<Obj[]>(again.url, '/api/v1/markets/result?mid=5.55000001');
  t.same(res.body, [{ mid: '5.55000001', mt: 'match-odd', res: '1', rt: true, ia: false }]);
});
