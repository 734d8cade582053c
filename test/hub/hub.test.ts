import t from 'tap';
import WebSocket from 'ws';
import { http, postJson, startTestService } from '../helpers/service.js';
import { Client } from '../helpers/ws.js';
import { eventually } from '../helpers/wait.js';
import { CLOSE } from '../../src/errors.js';

/**
 * The hub owns every socket's life: one rule admits markets to a socket, whichever way they
 * come, and every close it sends is a value of the catalogue.
 */
const LIVE = ['1.200001001', '1.200001002', '1.200001003', '1.200001004'];
/** A league and event of this test's own, with no market until one is created. */
const LEAGUE = 990001;
const EVENT = 99000001;

t.test('past its market limit, a socket subscribe, an event filter and the stored set are refused with the same message', async (t) => {
  const svc = await startTestService(t, { WS_MAX_MARKETS: '2' });
  const ingest = (...data: Record<string, unknown>[]) => postJson(svc.url, '/api/v1/ingest', { data });
  t.equal((await ingest(
    { kind: 'league', li: LEAGUE, si: 1, na: 'Hub League' },
    { kind: 'event', eid: EVENT, na: 'Hub Event', st: '2031-01-01T12:00:00.000Z', si: 1, li: LEAGUE },
  )).status, 200);
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  t.equal((await c.request({ op: 'subscribe', mids: LIVE.slice(0, 2) })).status, 1, 'the socket holds its limit');
  t.equal((await c.request({ op: 'subscribe', eids: [EVENT] })).status, 1, 'a filter on an event with no market adds none');
  const said = (mid: string) => `market ${mid} did not fit: a socket holds at most 2 markets`;

  const ack = await c.request({ op: 'subscribe', mids: [LIVE[2]] });
  t.same({ status: ack.status, message: ack.message }, { status: 0, message: said(LIVE[2]) }, 'subscribe: refused in its ack');

  const late = '1.99000001001';
  t.equal((await ingest({ kind: 'market', mid: late, eid: EVENT, na: 'Late market', ty: 'match-odd', r: [{ rid: 1, na: 'A' }, { rid: 2, na: 'B' }] })).status, 200);
  t.same(await c.next((f) => f.op === 'notice'), { op: 'notice', status: 0, message: said(late) }, 'a market of the filter: a notice');

  const from = c.frames.length;
  t.equal((await postJson(svc.url, '/api/v1/subscribe', { data: [LIVE[3]] })).status, 200);
  t.same(await c.next((f) => f.op === 'notice', 5000, from), { op: 'notice', status: 0, message: said(LIVE[3]) }, 'the stored set: a notice');
  await c.settled();
  t.same(c.frames.filter((f) => f.op === 'odds' && !LIVE.slice(0, 2).includes(f.mid)), [], 'no market past the limit was sent');
});

t.test('a notice is its own frame in protobuf too, and answers no request', async (t) => {
  const svc = await startTestService(t, { WS_MAX_MARKETS: '1' });
  const c = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => c.close());
  t.equal((await c.request({ op: 'subscribe', mids: [LIVE[0]] })).status, 1);
  t.equal((await postJson(svc.url, '/api/v1/subscribe', { data: [LIVE[1]] })).status, 200);
  t.same(await c.next((f) => f.op === 'notice'), { op: 'notice', status: 0, message: `market ${LIVE[1]} did not fit: a socket holds at most 1 markets` });
  t.same(c.frames.filter((f) => f.op === 'ack').map((f) => f.op === 'ack' && f.id), [1], 'one ack, for the one request');
});

t.test('a socket subscribe names a concluded market and takes it; a filter or the stored set never adds one', async (t) => {
  const svc = await startTestService(t);
  const concluded = '1.200002001';
  const markets = (await http<{ data: Record<string, { mid: string; go: boolean }[]> }>(svc.url, '/api/v1/events/markets?eid=30000002')).body.data['30000002'];
  t.ok(markets.some((m) => m.mid === concluded && m.go), `${concluded} is a concluded market of event 30000002`);
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  const byEvent = await c.request({ op: 'subscribe', eids: [30000002] });
  t.equal(byEvent.message, `Subscribed from event 30000002 (${markets.filter((m) => !m.go).length} markets)`, 'the filter left it out');
  t.equal((await c.request({ op: 'subscribe', mids: [concluded] })).message, `Subscribed from market ${concluded}`, 'named, it is taken');
});

t.test('shutdown closes subscribers and publishers with the catalogue\'s 1001, and the counts follow the sockets', async (t) => {
  const svc = await startTestService(t);
  const c = await Client.connect(svc.url);
  const pub = new WebSocket(svc.url.replace(/^http/, 'ws') + '/ingest', ['odds.v1.json']);
  const published = new Promise<{ code: number; reason: string }>((ok) => pub.on('close', (code, reason) => ok({ code, reason: reason.toString() })));
  await new Promise((ok, fail) => pub.once('open', ok).once('error', fail));
  await eventually(async () => svc.hub.sockets, (n) => n === 2);
  t.equal(svc.hub.size, 1, 'one subscriber');
  await svc.close();
  t.same(await c.closed, CLOSE.GOING_AWAY, 'the subscriber');
  t.same(await published, CLOSE.GOING_AWAY, 'the publisher');
  t.equal(svc.hub.sockets, 0, 'none counted once both closed');
});
