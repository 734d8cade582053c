import t from 'tap';
import { connect } from 'node:net';
import { spawn } from 'node:child_process';
import { http, keyLive, raw, startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { scrape, value } from '../helpers/metrics.js';
import { waitFor } from '../helpers/wait.js';
import { createKey } from '../../src/auth/keys.js';
import { CLOSE } from '../../src/errors.js';

type Reply = { status: number; message: string };
const svc = await startTestService(t, { AUTH: 'on', REST_RATE_LIMIT: '1000' });
const key = async (client: string, role: 'subscriber' | 'publisher' | 'admin') => (await createKey(svc.pool, client, role)).token;
const alice = await key('alice', 'subscriber');
const bob = await key('bob', 'subscriber');
const feeder = await key('feeder', 'publisher');
const root = await key('ops', 'admin');
/** Keys made through the pool are live on this pod once NOTIFY has been applied. */
await keyLive(svc.url, root);
const as = (token: string | undefined, path: string, init: RequestInit = {}) =>
  http<Reply>(svc.url, path, { ...init, headers: { ...(init.headers as Record<string, string>), ...(token ? { 'x-api-key': token } : {}) } });
const post = (token: string | undefined, path: string, body: unknown) =>
  as(token, path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

t.test('no key or an unknown key is a 401 with the error body; probes and metrics need none', async (t) => {
  for (const token of [undefined, 'nonsense', 'ok_0123456789ab_' + 'A'.repeat(43), alice.slice(0, -1) + (alice.endsWith('A') ? 'B' : 'A')]) {
    const r = await as(token, '/api/v1/sports');
    t.equal(r.status, 401, String(token).slice(0, 20));
    t.same(Object.keys(r.body), ['status', 'message']);
    t.equal(r.body.status, 0);
  }
  for (const path of ['/health', '/ready']) t.equal((await as(undefined, path)).status, 200, path);
  t.equal((await http(svc.metricsUrl, '/metrics')).status, 200, '/metrics, on the metrics port');
});

t.test('roles: subscribers read and subscribe, publishers ingest, admins do both; otherwise 403', async (t) => {
  t.equal((await as(alice, '/api/v1/sports')).status, 200);
  t.equal((await post(alice, '/api/v1/subscribe', { data: ['1.1'] })).status, 200);
  const refused = await post(alice, '/api/v1/ingest', { data: [image('1.200001001')] });
  t.equal(refused.status, 403);
  t.match(refused.body.message, /role \(subscriber\) may not do this; it needs publisher/);
  t.equal((await post(feeder, '/api/v1/ingest', { data: [image('1.200001001')] })).status, 200);
  t.equal((await as(feeder, '/api/v1/sports')).status, 403);
  t.equal((await as(root, '/api/v1/sports')).status, 200);
  t.equal((await post(root, '/api/v1/ingest', { data: [image('1.200001001')] })).status, 200);
});

t.test('/ws takes the key as a header or a query parameter, and refuses bad keys and roles at the handshake', async (t) => {
  await t.rejects(Client.connect(svc.url), /upgrade refused: 401/);
  await t.rejects(Client.connect(svc.url, { query: `key=${feeder}` }), /upgrade refused: 403/);
  const c = await Client.connect(svc.url, { query: `key=${alice}` });
  t.equal((await c.request({ op: 'ping' })).status, 1);
  c.close();
  const { default: WebSocket } = await import('ws');
  const h = new WebSocket(svc.url.replace('http', 'ws') + '/ws', { headers: { 'x-api-key': bob } });
  await new Promise((ok, fail) => { h.once('open', ok); h.once('error', fail); });
  h.close();
  const pub = new WebSocket(svc.url.replace('http', 'ws') + '/ingest', { headers: { 'x-api-key': alice } });
  const status = await new Promise((ok) => pub.once('unexpected-response', (_q, res) => ok(res.statusCode)));
  t.equal(status, 403, 'a subscriber key cannot publish over the socket either');
});

t.test('/ws with a key in the header and another as ?key= is refused with 401 saying so, whichever is valid; the same key in both opens', async (t) => {
  const { default: WebSocket } = await import('ws');
  const ws = svc.url.replace('http', 'ws') + '/ws';
  const refusal = (socket: InstanceType<typeof WebSocket>) => new Promise<{ status: number | undefined; body: unknown }>((ok, fail) => {
    socket.once('open', () => {
      socket.close();
      fail(new Error('the socket opened'));
    });
    socket.once('unexpected-response', (_req, res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (s: string) => (text += s)).on('end', () => ok({ status: res.statusCode, body: JSON.parse(text) }));
    });
  });
  const message = 'the x-api-key header and ?key= in the URL name different API keys: send one key, in one of them';
  for (const [header, inUrl] of [[alice, bob], [bob, alice], [alice, 'nonsense'], ['nonsense', alice]]) {
    const r = await refusal(new WebSocket(`${ws}?key=${encodeURIComponent(inUrl)}`, { headers: { 'x-api-key': header } }));
    t.same(r, { status: 401, body: { status: 0, message } }, `header ${header.slice(0, 16)}, ?key= ${inUrl.slice(0, 16)}`);
  }
  const both = new WebSocket(`${ws}?key=${alice}`, { headers: { 'x-api-key': alice } });
  await new Promise((ok, fail) => { both.once('open', ok); both.once('error', fail); });
  both.close();
});

t.test('x-api-key given twice naming different keys is refused with 401 saying so, on /ws, /ingest and REST, whichever comes first; the same key twice is served', async (t) => {
  const { default: WebSocket } = await import('ws');
  const base = svc.url.replace('http', 'ws');
  // ws sends an array as one header line per value; fetch would join them into one.
  const twice = (a: string, b: string) => ({ 'x-api-key': [a, b] as unknown as string });
  const handshake = (path: string, headers: Record<string, string>) => new Promise<{ status: number | undefined; body: unknown }>((ok, fail) => {
    const socket = new WebSocket(base + path, { headers });
    socket.once('open', () => {
      socket.close();
      ok({ status: 101, body: undefined });
    });
    socket.once('error', fail);
    socket.once('unexpected-response', (req, res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (s: string) => (text += s)).on('end', () => {
        req.destroy();
        ok({ status: res.statusCode, body: JSON.parse(text) });
      });
    });
  });
  const refused = { status: 401, body: { status: 0, message: 'the x-api-key header is given more than once, naming different API keys: send one key, once' } };
  for (const [first, second] of [[alice, root], [root, alice], [alice, 'nonsense']]) {
    const named = `${first.slice(0, 16)} then ${second.slice(0, 16)}`;
    t.same(await handshake('/ws', twice(first, second)), refused, `/ws: ${named}`);
    t.same(await handshake('/ingest', twice(first, second)), refused, `/ingest: ${named}`);
    const r = await raw<Reply>(svc.url, '/api/v1/markets/terms?mid=1.200001001', { headers: twice(first, second) });
    t.same({ status: r.status, body: r.body }, refused, `REST: ${named}`);
  }
  t.equal((await handshake('/ws', twice(alice, alice))).status, 101, 'the same key twice opens');
  t.equal((await raw(svc.url, '/api/v1/sports', { headers: twice(alice, alice) })).status, 200, 'and is served');
});

t.test('subscribe and unsubscribe touch only the caller\'s own set and sockets', async (t) => {
  const M = '1.200001002';
  const a = await Client.connect(svc.url, { query: `key=${alice}` });
  const b = await Client.connect(svc.url, { query: `key=${bob}` });
  t.teardown(() => { a.close(); b.close(); });
  await post(bob, '/api/v1/subscribe', { data: [M] });
  await a.request({ op: 'subscribe', mids: [M] });
  await b.request({ op: 'subscribe', mids: [M] });
  const r = await post(alice, '/api/v1/unsubscribe', { data: [M] });
  t.equal(r.status, 200);
  t.same(await a.next((f) => f.op === 'unsubscribed'), { op: 'unsubscribed', mids: [M] });
  const before = b.oddsOf(M).length;
  await post(feeder, '/api/v1/ingest', { data: [image(M, 7)] });
  await b.next((f) => f.op === 'odds' && f.mid === M && f.r[0].b[0][0] === 7);
  t.equal(b.oddsOf(M).length, before + 1, 'bob keeps his frames');
  t.notOk(b.frames.some((f) => f.op === 'unsubscribed'), 'bob was never detached');
  const stored = await svc.pool.query(`SELECT client_id FROM client_markets WHERE mid = $1 ORDER BY client_id`, [M]);
  t.same(stored.rows.map((x) => x.client_id), ['bob'], 'only bob\'s stored set still holds it');
});

t.test('a revoked key stops working within seconds, and its sockets are closed with 4003', async (t) => {
  const doomed = (await createKey(svc.pool, 'carol', 'subscriber'));
  await keyLive(svc.url, doomed.token);
  const c = await Client.connect(svc.url, { query: `key=${doomed.token}` });
  const cli = spawn(process.execPath, [new URL('../../src/cli/key.js', import.meta.url).pathname, 'revoke', doomed.id], { env: { ...process.env, DATABASE_URL: svc.databaseUrl } });
  let out = '';
  cli.stdout.on('data', (d) => (out += d));
  t.equal(await new Promise((ok) => cli.on('exit', ok)), 0);
  t.match(out, `revoked key ${doomed.id}`);
  t.same(await c.closed, CLOSE.REVOKED);
  t.equal((await as(doomed.token, '/api/v1/sports')).status, 401);
});

t.test('the per-key REST rate answers 429 with Retry-After, and is counted', async (t) => {
  const slow = await startTestService(t, { AUTH: 'on', REST_RATE_LIMIT: '5' });
  const k = (await createKey(slow.pool, 'dave', 'subscriber')).token;
  // The key reaches the service by NOTIFY: wait until it is known before spending its allowance.
  await keyLive(slow.url, k);
  t.equal((await http<Reply>(slow.url, '/api/v1/sports', { headers: { 'x-api-key': k } })).status, 200, 'the new key works');
  const answers = await Promise.all(Array.from({ length: 20 }, () => http<Reply>(slow.url, '/api/v1/sports', { headers: { 'x-api-key': k } })));
  const limited = answers.filter((a) => a.status === 429);
  t.ok(limited.length >= 10, `${limited.length} of 20 limited`);
  t.match(limited[0].body.message, /at most 5 requests per second per API key/);
  t.ok(Number(limited[0].headers.get('retry-after')) >= 1);
  t.ok(value(await scrape(slow.url), 'odds_rate_limited_total', 'scope="rest"') >= 10);
});

t.test('sockets per key and in total are bounded at the handshake', async (t) => {
  const small = await startTestService(t, { AUTH: 'on', WS_MAX_SOCKETS_PER_KEY: '2', WS_MAX_SOCKETS: '3' });
  const k1 = (await createKey(small.pool, 'erin', 'subscriber')).token;
  const k2 = (await createKey(small.pool, 'frank', 'subscriber')).token;
  await keyLive(small.url, k1);
  await keyLive(small.url, k2);
  const open = [await Client.connect(small.url, { query: `key=${k1}` }), await Client.connect(small.url, { query: `key=${k1}` })];
  t.teardown(() => open.forEach((c) => c.close()));
  await t.rejects(Client.connect(small.url, { query: `key=${k1}` }), /upgrade refused: 429/, 'a third for the same key');
  open.push(await Client.connect(small.url, { query: `key=${k2}` }));
  await t.rejects(Client.connect(small.url, { query: `key=${k2}` }), /upgrade refused: 503/, 'over the total');
  const m = await scrape(small.url);
  t.equal(value(m, 'odds_ws_refused_total', 'reason="per_key"'), 1);
  t.equal(value(m, 'odds_ws_refused_total', 'reason="total"'), 1);
});

t.test('a connection that never finishes its handshake is closed by the server', async (t) => {
  let closed = false;
  const s = connect(svc.port, '127.0.0.1', () => s.write('GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\n'));
  s.on('close', () => (closed = true));
  s.on('error', () => undefined);
  // uWebSockets.js drops an HTTP connection that has not finished a request within 10 s: a server
  // that never closed it fails this wait's bound.
  await waitFor(() => closed, 'the server closed the half-sent handshake', 30_000, 100);
  t.pass('closed by the server');
});
