import t, { type Test } from 'tap';
import { postJson, startTestService } from '../helpers/service.js';
import { sqlClient } from '../helpers/db.js';
import { Client, image } from '../helpers/ws.js';
import type { ServerMessage } from '../../src/odds/messages.js';

/** The stored market sets REST subscribe changes: bounded, live markets only, and applied to the client's sockets within their own limit. */
const live = ['1.200001001', '1.200001002', '1.200001003', '1.200001004'];
const CONCLUDED = '1.200002001';

async function stored(t: Test, url: string): Promise<string[]> {
  const { rows } = await (await sqlClient(t, url)).query<{ mid: string }>("SELECT mid FROM client_markets WHERE client_id = 'public' ORDER BY mid");
  return rows.map((r) => r.mid);
}

t.test('subscribing past the stored-set limit is refused naming the limit, and nothing changes', async (t) => {
  const svc = await startTestService(t, { CLIENT_MAX_MARKETS: '3' });
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  t.equal((await postJson(svc.url, '/api/v1/subscribe', { data: live.slice(0, 2) })).status, 200);
  await c.settled();
  const frames = c.frames.length;
  const r = await postJson<{ status: number; message: string }>(svc.url, '/api/v1/subscribe', { data: live.slice(1) });
  t.equal(r.status, 400);
  t.same(r.body, { status: 0, message: 'subscribing to 2 more markets would pass the limit of 3 stored markets per client (it holds 2); unsubscribe some first' });
  t.same(await stored(t, svc.databaseUrl), live.slice(0, 2), 'the stored set is as it was');
  await c.settled();
  t.equal(c.frames.length, frames + 1, 'the live socket got nothing but the ping answer');
  t.equal((await postJson(svc.url, '/api/v1/subscribe', { data: [live[0], live[2]] })).status, 200, 'markets already held do not count again');
});

t.test('a concluded market is never stored, so a new socket starts with live markets only', async (t) => {
  const svc = await startTestService(t);
  t.equal((await postJson(svc.url, '/api/v1/subscribe', { data: [CONCLUDED, live[0]] })).status, 200);
  t.same(await stored(t, svc.databaseUrl), [live[0]]);
});

t.test('REST subscribe past a socket\'s own limit: the socket takes what fits and is told of the rest', async (t) => {
  const svc = await startTestService(t, { WS_MAX_MARKETS: '2' });
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [live[0]] });
  t.equal((await postJson(svc.url, '/api/v1/subscribe', { data: live.slice(1) })).status, 200, 'the stored set takes all of them');
  const told = await c.next((f) => f.op === 'notice');
  t.same(told, { op: 'notice', status: 0, message: `markets ${live[2]},${live[3]} did not fit: a socket holds at most 2 markets` });
  const over = await c.request({ op: 'subscribe', mids: [live[3]] });
  t.equal(over.message, `market ${live[3]} did not fit: a socket holds at most 2 markets`, 'the socket is full, however its markets were added');
});

/** Frames sent to the socket from `from` until the answer to a ping sent now: frames on one socket are ordered. */
async function sentUntilNow(c: Client, from: number): Promise<ServerMessage[]> {
  const id = c.send({ op: 'ping' });
  const pong = await c.next((f) => f.op === 'ack' && f.id === id, 5000, from);
  return c.frames.slice(from, c.frames.indexOf(pong));
}

t.test('read your writes: after each subscribe or unsubscribe answer, REST or socket, the set holds it and the pod\'s sockets act on it, 40 of 40', async (t) => {
  // Each round sends the socket two messages; a quick machine runs rounds faster than the default 50 a second allows.
  const svc = await startTestService(t, { WS_MESSAGES_PER_SECOND: '1000' });
  const db = await sqlClient(t, svc.databaseUrl);
  const [stored, own] = [live[0], live[1]];
  const viaRest = await Client.connect(svc.url);
  const viaOp = await Client.connect(svc.url);
  t.teardown(() => [viaRest, viaOp].forEach((c) => c.close()));
  const behind: string[] = [];
  for (let i = 0; i < 40; i++) {
    const on = i % 2 === 0;
    const marks = [viaRest.frames.length, viaOp.frames.length];
    const r = await postJson(svc.url, on ? '/api/v1/subscribe' : '/api/v1/unsubscribe', { data: [stored] });
    t.equal(r.status, 200);
    const held = (await db.query("SELECT 1 FROM client_markets WHERE client_id = 'public' AND mid = $1", [stored])).rowCount === 1;
    t.equal((await viaOp.request({ op: on ? 'subscribe' : 'unsubscribe', mids: [own] })).status, 1);
    // An update of both markets after both answers: it reaches exactly the sockets that hold them now.
    const ts = Date.now() + i;
    t.equal((await postJson(svc.url, '/api/v1/ingest', { data: [{ ...image(stored), ts }, { ...image(own), ts }] })).status, 200);
    const [restFrames, opFrames] = await Promise.all([sentUntilNow(viaRest, marks[0]), sentUntilNow(viaOp, marks[1])]);
    const updated = (frames: ServerMessage[], mid: string) => frames.some((f) => f.op === 'odds' && f.mid === mid && f.ts === ts);
    const toldGone = restFrames.some((f) => f.op === 'unsubscribed' && f.mids.includes(stored));
    if (held !== on) behind.push(`${i}: stored set ${held ? 'holds' : 'lacks'} ${stored}`);
    if (updated(restFrames, stored) !== on || toldGone === on) behind.push(`${i}: REST ${on ? 'subscribe' : 'unsubscribe'}: ${JSON.stringify(restFrames).slice(0, 300)}`);
    if (updated(opFrames, own) !== on) behind.push(`${i}: socket ${on ? 'subscribe' : 'unsubscribe'}: ${JSON.stringify(opFrames).slice(0, 300)}`);
  }
  t.same(behind, [], '40 of 40 current');
});
