/**
 * Browser origins on the socket routes: a browser sends Origin with every
 * WebSocket handshake, so a page of another site cannot publish or read the
 * feed through a visitor's browser unless the origin is configured. Clients
 * that are not browsers send no Origin and are decided by their key.
 */
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';

/** Opened, or refused with the HTTP status and body of the refusal. */
type Outcome = { open: WebSocket } | { status: number; body: { status: number; message: string } };

const statusOf = (o: Outcome): number => ('open' in o ? 101 : o.status);

function handshake(base: string, path: string, origin?: string): Promise<Outcome> {
  const ws = new WebSocket(base.replace(/^http/, 'ws') + path, origin ? { origin } : {});
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
const configured = await startTestService(t, { INGEST_ORIGINS: 'https://feed.example', WS_ORIGINS: 'self,https://bets.example' });

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
