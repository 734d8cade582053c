/**
 * docs/openapi.json against the real service: the document is valid OpenAPI 3.1, the process
 * serves it, and the real answers of every route, errors included, match its schemas.
 */
import t from 'tap';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { createServer, connect, type Socket } from 'node:net';
import SwaggerParser from '@apidevtools/swagger-parser';
import { http, keyLive, postJson, raw, startTestService, type Reply } from '../helpers/service.js';
import { freshDatabase } from '../helpers/db.js';
import { freePort } from '../helpers/net.js';
import { waitFor } from '../helpers/wait.js';
import { image, withTraded } from '../helpers/ws.js';
import { createKey } from '../../src/auth/keys.js';
import { encodeIngestProto } from '../../src/odds/ingest-codec.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { startService } from '../../src/service.js';
import { loadChecker, openapiText, OPENAPI_PATH } from './schema.js';

const api = await loadChecker();
const svc = await startTestService(t);

const get = (path: string, init: RequestInit = {}) => http(svc.url, path, init);
const chunks = <T>(xs: T[], n = 50): T[][] => Array.from({ length: Math.ceil(xs.length / n) }, (_, i) => xs.slice(i * n, i * n + n));
const pathOf = (url: string) => url.split('?')[0];

/** A WebSocket handshake over plain HTTP, so a refusal's status, headers and body can be read. */
function handshake(base: string, path: string, headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(base + path, {
      headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', ...headers },
    });
    const headersOf = (res: IncomingMessage) => {
      const hs = new Headers();
      for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') hs.set(k, v);
      return hs;
    };
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, headers: headersOf(res), body: undefined, text: '' });
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (s: string) => (text += s)).on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: headersOf(res), body: JSON.parse(text), text });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('the document is valid OpenAPI 3.1 and documents every route', async (t) => {
  const checked = (await SwaggerParser.validate(OPENAPI_PATH)) as { openapi: string };
  t.equal(checked.openapi, '3.1.0');
  const ops = Object.entries(api.doc.paths).flatMap(([path, item]) => Object.keys(item as object).map((m) => `${m.toUpperCase()} ${path}`));
  t.same(ops.sort(), [
    'GET /api/v1/events/markets', 'GET /api/v1/markets/result', 'GET /api/v1/markets/terms',
    'GET /api/v1/record/changes', 'GET /api/v1/record/price', 'GET /api/v1/record/screen', 'GET /api/v1/record/socket', 'GET /api/v1/record/sockets',
    'GET /api/v1/sports', 'GET /api/v1/sports/events',
    'GET /health', 'GET /ingest', 'GET /metrics', 'GET /openapi.json', 'GET /ready', 'GET /ws',
    'POST /api/v1/ingest', 'POST /api/v1/subscribe', 'POST /api/v1/unsubscribe',
  ]);
});

t.test('GET /openapi.json serves docs/openapi.json byte for byte, with no key', async (t) => {
  const r = await get('/openapi.json');
  t.equal(r.status, 200);
  t.equal(r.headers.get('content-type'), 'application/json');
  t.equal(r.text, openapiText());
  api.check(t, 'GET', '/openapi.json', r);
});

t.test('the schemas hold the presence rules: they refuse what the service must never answer', async (t) => {
  const market = { mid: '1.1', eid: 1, na: 'M', si: 4, s: false, go: false, ty: 'match-odd', rt: false };
  t.same(api.errorsOf('Market', market), [], 'a market without optional keys');
  t.same(api.errorsOf('Market', { ...market, if: null, di: 3, r: [{ rid: 1, na: 'A' }] }), []);
  t.not(api.errorsOf('Market', { ...market, bl: 1.1 }).length, 0, 'bl off ball-by-ball');
  t.not(api.errorsOf('Market', { ...market, m: [] }).length, 0, 'm off player-race');
  t.not(api.errorsOf('Market', { ...market, ty: 'player-race' }).length, 0, 'player-race without m');
  t.not(api.errorsOf('Market', { ...market, ty: 'player-race', m: [], r: [] }).length, 0, 'r on player-race');
  t.not(api.errorsOf('Market', { ...market, extra: 1 }).length, 0, 'a key the REST contract does not have');
  t.not(api.errorsOf('Error', { status: 1, message: 'x' }).length, 0, 'an error body with status 1');
});

t.test('reference reads: every sport, event, market and result of the demo data matches its schema', async (t) => {
  const sports = await get('/api/v1/sports');
  api.check(t, 'GET', '/api/v1/sports', sports);
  const sis = (sports.body as { si: number }[]).map((s) => s.si);
  const events = await get(`/api/v1/sports/events?si=${sis.join(',')}`);
  api.check(t, 'GET', '/api/v1/sports/events', events);
  api.check(t, 'GET', '/api/v1/sports/events', await get('/api/v1/sports/events?si=4&li=4001'));
  const eids = Object.values((events.body as { data: Record<string, { eid: number }[]> }).data).flat().map((e) => e.eid);
  const mids: string[] = [];
  const seen = new Set<string>();
  for (const part of chunks([...eids, 999999])) {
    const r = await get(`/api/v1/events/markets?eid=${part.join(',')}`);
    api.check(t, 'GET', '/api/v1/events/markets', r);
    for (const list of Object.values((r.body as { data: Record<string, Record<string, unknown>[]> }).data)) {
      for (const m of list) {
        mids.push(m.mid as string, ...((m.m as { mid: string }[] | undefined) ?? []).map((n) => n.mid));
        for (const key of ['if', 'di', 'bl', 'r', 'm']) if (key in m) seen.add(key);
      }
    }
  }
  t.same([...seen].sort(), ['bl', 'di', 'if', 'm', 'r'], 'the answers exercised every optional key');
  for (const part of chunks([...mids, 'no.such.market'])) api.check(t, 'GET', '/api/v1/markets/result', await get(`/api/v1/markets/result?mid=${part.join(',')}`));
  for (const part of chunks([...mids, 'no.such.market'])) api.check(t, 'GET', '/api/v1/markets/terms', await get(`/api/v1/markets/terms?mid=${part.join(',')}`));
});

t.test('the terms route with every term and a settlement, as a publisher gave them', async (t) => {
  // A line market with runners, as an exchange's line market is: every term has a meaning on it, the line's range too.
  const mid = '1.299000101';
  const market = { kind: 'market', mid, eid: 30000001, na: 'Total Runs', ty: 'line-market', r: [{ rid: 101, na: 'Over' }, { rid: 102, na: 'Under' }] };
  const terms = {
    kind: 'terms', mid, bd: 5, tip: true, sus: 1795313378336, bt: 'ODDS', nw: 1, ewd: 4, bsp: false, cc: 'IN', ven: 'Wankhede', race: 'T20', mbr: 5,
    reg: ['MGA'], lmin: 0, lmax: 300, lint: 1, r: [{ rid: 101, st: 'ACTIVE', af: 40.1, hc: 0 }, { rid: 102, st: 'REMOVED', af: 59.9, rd: 1795313000000 }],
  };
  const result = { kind: 'result', mid, res: '101', rt: false, ia: false, cert: 'provisional', at: 1795313378336, rs: [{ rid: 101, st: 'WINNER', dh: 1 }, { rid: 102, st: 'REMOVED', vf: 1 }] };
  t.same(api.errorsOf('IngestBatch', { data: [market, terms, result] }), [], 'the items sent are ones the document describes');
  t.equal((await postJson(svc.url, '/api/v1/ingest', { data: [market, terms, result] })).status, 200);
  const r = await get(`/api/v1/markets/terms?mid=${mid}`);
  t.same((r.body as { terms: object }[])[0].terms && Object.keys((r.body as { terms: object }[])[0].terms).length, 16, 'every term');
  api.check(t, 'GET', '/api/v1/markets/terms', r);
});

t.test('subscribe, unsubscribe and ingest in both body formats', async (t) => {
  api.check(t, 'POST', '/api/v1/subscribe', await postJson(svc.url, '/api/v1/subscribe', { data: ['1.200001001', '1.200001002'] }));
  api.check(t, 'POST', '/api/v1/unsubscribe', await postJson(svc.url, '/api/v1/unsubscribe', { data: ['1.200001002'] }));
  const batch = { data: [withTraded(image('1.200001001')), { kind: 'market', mid: '1.200001002', s: false }] };
  t.same(api.errorsOf('IngestBatch', batch), [], 'the batch sent is one the document describes');
  api.check(t, 'POST', '/api/v1/ingest', await postJson(svc.url, '/api/v1/ingest', batch));
  const proto = await http(svc.url, '/api/v1/ingest', { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: Buffer.from(encodeIngestProto(batch.data)) });
  t.equal(proto.status, 200);
  api.check(t, 'POST', '/api/v1/ingest', proto);
  const partly = { data: [withTraded(image('1.200001001')), { kind: 'odds', mid: '1.200001001' }, { kind: 'stale', mid: '1.200001002', why: 'late' }, { kind: 'stale', mid: 'no.such' }] };
  const refused = await postJson<{ refused?: unknown[] }>(svc.url, '/api/v1/ingest', partly);
  t.equal(refused.body.refused?.length, 2, 'two items refused alone, the others applied');
  api.check(t, 'POST', '/api/v1/ingest', refused);
  const heartbeat = await postJson(svc.url, '/api/v1/ingest', { data: [] });
  t.same(heartbeat.body, { status: 1, message: 'Ingested 0 items' });
  api.check(t, 'POST', '/api/v1/ingest', heartbeat);
});

t.test('probes and metrics', async (t) => {
  for (const path of ['/health', '/ready']) {
    const r = await get(path);
    t.equal(r.status, 200, path);
    api.check(t, 'GET', path, r);
  }
  const metrics = await http(svc.metricsUrl, '/metrics');
  t.equal(metrics.status, 200, '/metrics on the metrics port');
  api.check(t, 'GET', '/metrics', metrics);
  const elsewhere = await get('/metrics');
  t.equal(elsewhere.status, 404, '/metrics on the public port');
  api.check(t, 'GET', '/metrics', elsewhere);
});

t.test('the /ingest 101 carries the headers it documents: the bounds the connection keeps, as configured', async (t) => {
  const r = await handshake(svc.url, '/ingest');
  t.equal(r.status, 101);
  const documented = Object.entries(api.response('GET', '/ingest', 101)!.headers as Record<string, { schema: { type: string } }>);
  t.equal(documented.length, 5);
  for (const [name, header] of documented) {
    t.equal(header.schema.type, 'integer', name);
    t.match(r.headers.get(name), /^[1-9]\d*$/, `${name}: ${r.headers.get(name)}`);
  }
  t.equal(r.headers.get('x-ingest-max-in-flight'), '128', 'the default of INGEST_MAX_IN_FLIGHT');
});

t.test('403 for a socket handshake from a browser origin the route does not allow', async (t) => {
  for (const path of ['/ws', '/ingest']) {
    const r = await handshake(svc.url, path, { origin: 'https://elsewhere.example' });
    t.equal(r.status, 403, path);
    api.check(t, 'GET', path, r);
  }
});

t.test('400: bad parameters and bodies, and plain requests or a bad hb on the socket routes', async (t) => {
  for (const url of [
    '/api/v1/sports/events', '/api/v1/sports/events?si=x', '/api/v1/sports/events?si=1&si=2', '/api/v1/sports/events?si=4&li=0',
    '/api/v1/events/markets?eid=', `/api/v1/events/markets?eid=${Array.from({ length: 51 }, (_, i) => i + 1).join(',')}`,
    '/api/v1/markets/result?mid=a%20b', '/api/v1/markets/result',
  ]) {
    const r = await get(url);
    t.equal(r.status, 400, url);
    api.check(t, 'GET', pathOf(url), r);
  }
  for (const [path, body] of [['/api/v1/subscribe', { data: [] }], ['/api/v1/unsubscribe', { nope: 1 }], ['/api/v1/ingest', { data: [{ kind: 'market', mid: '1.200001001', s: 'yes' }] }]] as const) {
    const r = await postJson(svc.url, path, body);
    t.equal(r.status, 400, path);
    api.check(t, 'POST', path, r);
  }
  const broken = await http(svc.url, '/api/v1/ingest', { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: new Uint8Array([0xff, 0xff, 0xff]) });
  t.equal(broken.status, 400);
  api.check(t, 'POST', '/api/v1/ingest', broken);
  for (const path of ['/ws', '/ingest']) {
    const r = await get(path);
    t.equal(r.status, 400, `plain GET ${path}`);
    api.check(t, 'GET', path, r);
  }
  const hb = await handshake(svc.url, '/ws?hb=100');
  t.equal(hb.status, 400);
  api.check(t, 'GET', '/ws', hb);
  t.equal((await handshake(svc.url, '/ws?hb=500')).status, 101, 'a good handshake upgrades');
});

t.test('404, 405 with Allow, 413 and 415', async (t) => {
  const missing = await get('/api/v2/sports');
  t.equal(missing.status, 404);
  api.check(t, 'GET', '/api/v2/sports', missing);
  for (const [method, path, allow] of [['DELETE', '/api/v1/sports', 'GET, HEAD'], ['GET', '/api/v1/subscribe', 'POST'], ['POST', '/health', 'GET, HEAD']]) {
    const r = await get(path, { method });
    t.equal(r.status, 405, `${method} ${path}`);
    t.equal(r.headers.get('allow'), allow);
    api.check(t, method, path, r);
  }
  const big = await http(svc.url, '/api/v1/subscribe', { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'x'.repeat(1024 * 1024 + 1) });
  t.equal(big.status, 413);
  api.check(t, 'POST', '/api/v1/subscribe', big);
  for (const path of ['/api/v1/subscribe', '/api/v1/ingest']) {
    const r = await http(svc.url, path, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"data":["1.1"]}' });
    t.equal(r.status, 415, path);
    api.check(t, 'POST', path, r);
  }
});

t.test('AUTH=on: 401 and 403 on every data route and socket handshake; probes and the document need no key', async (t) => {
  const secured = await startTestService(t, { AUTH: 'on', REST_RATE_LIMIT: '1000', WS_MAX_SOCKETS_PER_KEY: '1', METRICS_TOKEN: 'metrics-token-0123456789' });
  const reader = (await createKey(secured.pool, 'acme', 'subscriber')).token;
  const publisher = (await createKey(secured.pool, 'feed', 'publisher')).token;
  await keyLive(secured.url, publisher);
  const as = (key: string | undefined, method: string, url: string, body?: unknown) => http(secured.url, url, {
    method, headers: { ...(key ? { 'x-api-key': key } : {}), ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined,
  });
  const routes: [string, string, unknown?][] = [
    ['GET', '/api/v1/sports'], ['GET', '/api/v1/sports/events?si=4'], ['GET', '/api/v1/events/markets?eid=30000001'],
    ['GET', '/api/v1/markets/result?mid=1.200001001'], ['POST', '/api/v1/subscribe', { data: ['1.1'] }],
    ['POST', '/api/v1/unsubscribe', { data: ['1.1'] }], ['POST', '/api/v1/ingest', { data: [image('1.200001001')] }],
  ];
  for (const [method, url, body] of routes) {
    const none = await as(undefined, method, url, body);
    t.equal(none.status, 401, `${method} ${url} without a key`);
    api.check(t, method, pathOf(url), none);
    const wrong = await as(url === '/api/v1/ingest' ? reader : publisher, method, url, body);
    t.equal(wrong.status, 403, `${method} ${url} with the wrong role`);
    api.check(t, method, pathOf(url), wrong);
  }
  for (const [path, wrongRole] of [['/ws', publisher], ['/ingest', reader]]) {
    const none = await handshake(secured.url, path);
    t.equal(none.status, 401, `${path} without a key`);
    api.check(t, 'GET', path, none);
    const wrong = await handshake(secured.url, path, { 'x-api-key': wrongRole });
    t.equal(wrong.status, 403, `${path} with the wrong role`);
    api.check(t, 'GET', path, wrong);
  }
  const held = await new Promise<Socket>((resolve, reject) => {
    const req = httpRequest(`${secured.url}/ws?key=${reader}`, { headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' } });
    req.on('upgrade', (_res, socket) => resolve(socket));
    req.on('error', reject);
    req.end();
  });
  const second = await handshake(secured.url, `/ws?key=${reader}`);
  t.equal(second.status, 429, 'a second socket past WS_MAX_SOCKETS_PER_KEY');
  api.check(t, 'GET', '/ws', second);
  held.destroy();
  for (const path of ['/health', '/ready', '/openapi.json']) t.equal((await as(undefined, 'GET', path)).status, 200, `${path} needs no key`);
  t.equal((await http(secured.metricsUrl, '/metrics', { headers: { authorization: 'Bearer metrics-token-0123456789' } })).status, 200, '/metrics needs no key, only its token');
  const untokened = await http(secured.metricsUrl, '/metrics');
  t.equal(untokened.status, 401, '/metrics without METRICS_TOKEN');
  api.check(t, 'GET', '/metrics', untokened);
});

t.test('421 for a Host that is no name of the service, on a route and a socket handshake', async (t) => {
  const host = 'rebind.attacker.example';
  const r = await raw(svc.url, '/api/v1/sports', { headers: { host } });
  t.equal(r.status, 421);
  api.check(t, 'GET', '/api/v1/sports', r);
  const h = await handshake(svc.url, '/ws', { host });
  t.equal(h.status, 421);
  api.check(t, 'GET', '/ws', h);
});

t.test('429 with Retry-After past REST_RATE_LIMIT', async (t) => {
  const limited = await startTestService(t, { REST_RATE_LIMIT: '1' });
  const replies: Reply[] = [];
  for (let i = 0; i < 3; i++) replies.push(await http(limited.url, '/api/v1/sports'));
  const refused = replies.find((r) => r.status === 429);
  if (!t.ok(refused, 'a request past the allowance is refused')) return;
  api.check(t, 'GET', '/api/v1/sports', refused!);
  const post = await postJson(limited.url, '/api/v1/subscribe', { data: ['1.1'] });
  t.equal(post.status, 429);
  api.check(t, 'POST', '/api/v1/subscribe', post);
});

t.test('503 while starting: /ready, data routes, writes and socket handshakes', async (t) => {
  // Postgres is reached through a port nobody listens on yet, so the service waits there, listening.
  const real = new URL(await freshDatabase(t));
  const pgPort = await freePort();
  const url = new URL(real.toString());
  url.port = String(pgPort);
  const port = await freePort();
  const config = loadConfig({ HOST: '127.0.0.1', PORT: String(port), METRICS_PORT: '0', DATABASE_URL: url.toString(), DEMO_DATA: 'on', SIMULATOR: 'off', DRAIN_DELAY_MS: '0', PG_CONNECT_TIMEOUT_MS: '500' });
  const starting = startService(config, url.toString(), createLogger('error', false, (l) => process.stderr.write(l)));
  const base = `http://127.0.0.1:${port}`;
  await waitFor(() => http(base, '/health').then(() => true, () => false), 'the service answering /health while Postgres is away', 30000, 25);
  const checks: [string, string, Promise<Reply>][] = [
    ['GET', '/ready', http(base, '/ready')],
    ['GET', '/api/v1/sports', http(base, '/api/v1/sports')],
    ['GET', '/api/v1/events/markets', http(base, '/api/v1/events/markets?eid=1')],
    ['POST', '/api/v1/subscribe', postJson(base, '/api/v1/subscribe', { data: ['1.1'] })],
    ['POST', '/api/v1/ingest', postJson(base, '/api/v1/ingest', { data: [image('1.1')] })],
    ['GET', '/ws', handshake(base, '/ws')],
  ];
  for (const [method, path, reply] of checks) {
    const r = await reply;
    t.equal(r.status, 503, `${method} ${path}`);
    api.check(t, method, path, r);
  }
  // Now let Postgres through, so the service finishes starting and can be closed.
  const sockets = new Set<Socket>();
  const proxy = createServer((client) => {
    const upstream = connect(Number(real.port), real.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined).on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((ok) => proxy.listen(pgPort, '127.0.0.1', ok));
  const service = await starting;
  await service.close();
  for (const s of sockets) s.destroy();
  await new Promise((ok) => proxy.close(ok));
  t.pass('the service started once Postgres answered');
});
