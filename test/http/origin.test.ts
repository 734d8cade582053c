/**
 * What a browser page of another site can do through a visitor's browser.
 * Browser origins on the socket routes: a browser sends Origin with every
 * WebSocket handshake, so a page of another site cannot publish or read the
 * feed unless the origin is configured. Clients that are not browsers send no
 * Origin and are decided by their key. And Host on every route: a page on a
 * name rebound to this machine (DNS rebinding) sends that name as Host and
 * Origin alike, and is refused before anything is read or written.
 */
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { raw, startTestService, type Reply } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { HostPolicy } from '../../src/http/host.js';

/** Opened, or refused with the HTTP status and body of the refusal. */
type Outcome = { open: WebSocket } | { status: number; body: { status: number; message: string } };

const statusOf = (o: Outcome): number => ('open' in o ? 101 : o.status);

function handshake(base: string, path: string, origin?: string, host?: string): Promise<Outcome> {
  const ws = new WebSocket(base.replace(/^http/, 'ws') + path, { ...(origin ? { origin } : {}), ...(host ? { headers: { host } } : {}) });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ open: ws }));
    ws.once('unexpected-response', (req, res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d));
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) });
      });
    });
    ws.once('error', reject);
  });
}

/** Opened: closed when the test ends. */
function opened(t: Test, o: Outcome): WebSocket | undefined {
  if (!('open' in o)) {
    t.fail(`refused: ${o.status} ${JSON.stringify(o.body)}`);
    return undefined;
  }
  t.teardown(() => o.open.close());
  return o.open;
}

const FOREIGN = 'https://odds-thief.example';
const svc = await startTestService(t);
const configured = await startTestService(t, { INGEST_ORIGINS: 'https://feed.example', WS_ORIGINS: 'self,https://bets.example', ALLOWED_HOSTS: 'odds.example.com' });

t.test('/ingest refuses a browser page of another origin with a 403 naming the rule', async (t) => {
  const r = await handshake(svc.url, '/ingest', FOREIGN);
  t.same(r, { status: 403, body: { status: 0, message: `origin ${FOREIGN} may not open /ingest: browser pages may not open it (INGEST_ORIGINS lists no origin)` } });
});

t.test("/ingest refuses even the service's own origin unless it is listed", async (t) => {
  t.equal(statusOf(await handshake(svc.url, '/ingest', svc.url)), 403);
});

t.test('/ingest without Origin (a publisher that is not a browser) opens and publishes', async (t) => {
  const sub = await Client.connect(svc.url);
  t.teardown(() => sub.close());
  await sub.request({ op: 'subscribe', mids: ['1.200001001'] });
  const ws = opened(t, await handshake(svc.url, '/ingest'));
  if (!ws) return;
  const ack = new Promise<unknown>((ok) => ws.once('message', (d: Buffer) => ok(JSON.parse(d.toString()))));
  ws.send(JSON.stringify({ id: 7, data: [image('1.200001001', 3.5)] }));
  t.same(await ack, { op: 'ack', id: 7, status: 1, message: 'Ingested 1 item' });
  const frame = await sub.next((f) => f.op === 'odds');
  t.equal((frame as { mid: string }).mid, '1.200001001');
});

t.test('/ingest opens for an origin listed in INGEST_ORIGINS, and refuses others there too', async (t) => {
  opened(t, await handshake(configured.url, '/ingest', 'https://feed.example'));
  const r = await handshake(configured.url, '/ingest', 'https://bets.example');
  t.same(r, { status: 403, body: { status: 0, message: 'origin https://bets.example may not open /ingest: browser pages may open it only from https://feed.example (INGEST_ORIGINS)' } });
});

t.test('/ws refuses a page of another origin with a 403 naming the rule', async (t) => {
  const r = await handshake(configured.url, '/ws', FOREIGN);
  t.same(r, { status: 403, body: { status: 0, message: `origin ${FOREIGN} may not open /ws: browser pages may open it only from the service's own origin, https://bets.example (WS_ORIGINS)` } });
  t.equal(statusOf(await handshake(svc.url, '/ws', FOREIGN)), 403, 'by default too (AUTH=off: the board only)');
});

t.test("/ws opens for the service's own origin (the board at /), by default", async (t) => {
  opened(t, await handshake(svc.url, '/ws', svc.url));
});

t.test('/ws opens for a betting site listed in WS_ORIGINS', async (t) => {
  opened(t, await handshake(configured.url, '/ws', 'https://bets.example'));
});

t.test('/ws with AUTH=on takes any origin by default: the subscriber key decides', async (t) => {
  const keyed = await startTestService(t, { AUTH: 'on' });
  const r = await handshake(keyed.url, '/ws', FOREIGN);
  t.equal(statusOf(r), 401, 'past the origin check, refused for want of a key');
  t.notMatch('body' in r ? r.body.message : '', /origin/);
});

// ---------------------------------------------------------------- Host

t.test('the names a service answers to: localhost and IP addresses with any port, and those listed', async (t) => {
  const loopback = new HostPolicy([]);
  for (const h of ['localhost', 'localhost:8080', 'LocalHost.:1', '127.0.0.1:8080', '127.0.0.2', '[::1]:8080', '[::1]', '10.1.2.3:8080', '']) t.ok(loopback.allows(h), h);
  for (const h of ['evil.example', 'evil.example:8080', 'localhost.evil.example', '127.0.0.1.nip.io', '[::1', 'x', '[::1]evil', '[::1]:8080x', 'localhost:evil', '127.0.0.1:']) t.notOk(loopback.allows(h), h);
  const listed = new HostPolicy(['odds.example.com', '*.bets.example']);
  for (const h of ['odds.example.com:443', 'ODDS.example.com', 'a.bets.example', 'a.b.bets.example:8080', 'localhost']) t.ok(listed.allows(h), h);
  for (const h of ['bets.example', 'xbets.example', 'example.com']) t.notOk(listed.allows(h), h);
  t.ok(new HostPolicy(['*']).allows('anything.example'), '* for any');
  t.has(listed.refusal('evil.example'), { code: 'MISDIRECTED' }, 'a coded refusal');
  t.equal(listed.refusal('evil.example')!.message, 'host evil.example is not a name of this service: this service answers to localhost and IP addresses and odds.example.com, *.bets.example (ALLOWED_HOSTS)');
});

const REBOUND = 'rebind.attacker.example';

/** Every HTTP route of the public port, and those of the metrics port, as [name, base, path, init]. */
async function routes(): Promise<[string, string, string, { method?: string; body?: string; headers?: Record<string, string> }][]> {
  const asset = /\/assets\/[^"]+\.js/.exec((await raw<string>(svc.url, '/')).text)![0];
  const post = (body: unknown) => ({ method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  return [
    ['sports', svc.url, '/api/v1/sports', {}],
    ['events', svc.url, '/api/v1/sports/events?si=4', {}],
    ['markets', svc.url, '/api/v1/events/markets?eid=30000001', {}],
    ['results', svc.url, '/api/v1/markets/result?mid=1.200001001', {}],
    ['subscribe', svc.url, '/api/v1/subscribe', post({ data: ['1.200001001'] })],
    ['unsubscribe', svc.url, '/api/v1/unsubscribe', post({ data: ['1.200001001'] })],
    ['ingest', svc.url, '/api/v1/ingest', post({ data: [image('1.200001001', 9)] })],
    ['health', svc.url, '/health', {}],
    ['ready', svc.url, '/ready', {}],
    ['openapi', svc.url, '/openapi.json', {}],
    ['board', svc.url, '/', {}],
    ['board asset', svc.url, asset, {}],
    ['metrics pointer', svc.url, '/metrics', {}],
    ['unknown path', svc.url, '/no/such/path', {}],
    ['wrong method', svc.url, '/api/v1/sports', { method: 'DELETE' }],
    ['plain GET of /ws', svc.url, '/ws', {}],
    ['metrics', svc.metricsUrl, '/metrics', {}],
    ['metrics port health', svc.metricsUrl, '/health', {}],
    ['metrics port ready', svc.metricsUrl, '/ready', {}],
  ];
}

t.test('a foreign Host is refused 421 on every route of both ports and on both sockets, with nothing written; loopback names pass', async (t) => {
  const mid = '1.200001001';
  const seq = svc.book.get(mid)?.seq;
  const port = new URL(svc.url).port;
  for (const [name, base, path, init] of await routes()) {
    const r = await raw<{ status: number; message: string }>(base, path, { ...init, headers: { ...init.headers, host: `${REBOUND}:${port}` } });
    t.same([r.status, r.body.status, r.body.message], [421, 0, `host ${REBOUND}:${port} is not a name of this service: this service answers to localhost and IP addresses (ALLOWED_HOSTS)`], name);
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
      const ok = await raw(base, path, { ...init, headers: { ...init.headers, host } });
      t.not(ok.status, 421, `${name} as ${host}`);
    }
  }
  for (const path of ['/ws', '/ingest']) {
    t.equal(statusOf(await handshake(svc.url, path, undefined, REBOUND)), 421, `${path} handshake`);
    opened(t, await handshake(svc.url, path, undefined, `localhost:${port}`));
  }
  t.not(svc.book.get(mid)?.seq, seq, 'the loopback names\' ingest took effect');
});

t.test('DNS rebinding: a page on a rebound name, Host and Origin both its own, neither reads the feed nor publishes nor subscribes', async (t) => {
  const page = `http://${REBOUND}:${new URL(svc.url).port}`;
  const mid = '1.200001001';
  const before = svc.book.get(mid)?.seq;
  const headers = { host: page.slice(7), origin: page, 'content-type': 'application/json' };
  const ingest = await raw(svc.url, '/api/v1/ingest', { method: 'POST', headers, body: JSON.stringify({ data: [image(mid, 4)] }) });
  t.equal(ingest.status, 421, 'POST /api/v1/ingest');
  const sub = await raw(svc.url, '/api/v1/subscribe', { method: 'POST', headers, body: JSON.stringify({ data: [mid] }) });
  t.equal(sub.status, 421, 'POST /api/v1/subscribe');
  const read = await raw(svc.url, '/api/v1/sports', { headers });
  t.equal(read.status, 421, 'a read, whose answer the page could see');
  t.equal(statusOf(await handshake(svc.url, '/ws', page, page.slice(7))), 421, '/ws: the self origin rule does not take Host alone');
  t.equal(statusOf(await handshake(svc.url, '/ingest', page, page.slice(7))), 421, '/ingest');
  t.equal(svc.book.get(mid)?.seq, before, 'no price was written');
  const stored = await svc.pool.query("SELECT count(*)::int AS n FROM client_markets WHERE client_id = 'public' AND mid = $1", [mid]);
  t.equal(stored.rows[0].n, 0, 'no subscription was stored');
});

t.test('ALLOWED_HOSTS: the names listed pass, and the board on one of them opens /ws as its own origin', async (t) => {
  const r: Reply = await raw(configured.url, '/api/v1/sports', { headers: { host: 'odds.example.com' } });
  t.equal(r.status, 200);
  t.equal((await raw(configured.url, '/api/v1/sports', { headers: { host: 'other.example.com' } })).status, 421);
  opened(t, await handshake(configured.url, '/ws', 'https://odds.example.com', 'odds.example.com'));
});
