/**
 * The attack from the browser, in Chromium: a page served by another origin
 * (a small server of the test's own, on another port) opens
 * `ws://127.0.0.1:PORT/ingest` and sends a price. The service refuses the
 * handshake, so a subscriber never sees that price. The same page on a
 * service that lists its origin in INGEST_ORIGINS does publish: the page
 * would work if the check were not there.
 *
 * And DNS rebinding: Chromium resolves the attacker's name to 127.0.0.1
 * (--host-resolver-rules), as a rebinding DNS server would once the page is
 * loaded, so the service is the page's own origin and the browser lets it
 * post JSON and read answers. Only the Host check stops it; a service that
 * lists that name in ALLOWED_HOSTS shows the page would succeed without it.
 * Recent Chromium asks the user before a public page reaches a local address
 * (Local Network Access); other browsers do not, so that check is turned off
 * here to play one of them.
 */
import t, { type Test } from 'tap';
import { createServer } from 'node:http';
import type { Route } from 'playwright-core';
import { postJson, startTestService, type TestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { hasChromium, launch, newPage, visit, CHROMIUM, type Opened } from './browser.js';

const MID = '1.200001001';
/** The market the rebinding pages aim at: the first two tests share a service, and each must find its market unpublished. */
const REBOUND_MID = '1.200001002';
/** A price no real market would show, yet one the price rule allows: the origin check alone must stop it. */
const PLANTED = 900;
/** The attacker's name, which this browser resolves to 127.0.0.1. */
const REBOUND = 'rebind.attacker.example';

/** A page on 127.0.0.1 at a port of its own: another origin than the service's. */
async function foreignSite(t: Test): Promise<string> {
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>elsewhere</title>'));
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => new Promise<void>((ok) => server.close(() => ok())));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** What the page's socket did: `open` (and the ack it got), or `refused`. */
async function publishFromPage(tab: Opened, site: string, svc: TestService): Promise<string> {
  const { page } = await visit(tab, site);
  const batch = JSON.stringify({ id: 1, data: [image(MID, PLANTED)] });
  return page.evaluate(({ url, batch }) => new Promise<string>((done) => {
    const ws = new WebSocket(url);
    ws.onopen = () => ws.send(batch);
    ws.onmessage = (e) => done(`open: ${String(e.data)}`);
    ws.onerror = () => done('refused');
  }), { url: svc.url.replace(/^http/, 'ws') + '/ingest', batch });
}

/**
 * The attacker's page on REBOUND at the service's own port: its document as
 * it was served before the name was rebound (the browser fetches it no
 * more), then, same-origin, a JSON POST of a price, a read and a /ws socket.
 */
async function rebound(t: Test, tab: Opened, svc: TestService): Promise<{ post: number | string; read: number | string; ws: string }> {
  const origin = `http://${REBOUND}:${new URL(svc.url).port}`;
  const { page } = tab;
  const served = (route: Route) => route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>rebound</title>' });
  await page.route(`${origin}/`, served);
  t.teardown(() => page.unroute(`${origin}/`, served));
  await visit(tab, `${origin}/`);
  const batch = JSON.stringify({ data: [image(REBOUND_MID, PLANTED)] });
  return page.evaluate(async (batch) => {
    const status = (p: Promise<Response>) => p.then((r) => r.status, (e: Error) => e.message);
    const post = await status(fetch('/api/v1/ingest', { method: 'POST', headers: { 'content-type': 'application/json' }, body: batch }));
    const read = await status(fetch('/api/v1/sports'));
    const ws = await new Promise<string>((done) => {
      const s = new WebSocket(`ws://${location.host}/ws`);
      s.onopen = () => { s.close(); done('open'); };
      s.onerror = () => done('refused');
    });
    return { post, read, ws };
  }, batch);
}

/** The subscriber's odds frames of `mid`, once a price published the proper way has reached it. */
async function pricesSeen(svc: TestService, sub: Client, mid: string): Promise<number[]> {
  const r = await postJson(svc.url, '/api/v1/ingest', { data: [image(mid, 2.5)] });
  if (r.status !== 200) throw new Error(`ingest refused: ${JSON.stringify(r.body)}`);
  await sub.next((f) => f.op === 'odds' && f.r[0]?.b[0]?.[0] === 2.5);
  return sub.oddsOf(mid).map((f) => f.r[0]!.b[0]![0]);
}

if (!hasChromium()) {
  t.plan(0, `${CHROMIUM} is missing (Debian's chromium package; .ci/run installs it)`);
} else {
  const browser = await launch([`--host-resolver-rules=MAP ${REBOUND} 127.0.0.1`, '--disable-features=LocalNetworkAccessChecks']);
  t.teardown(() => browser.close());
  const site = await foreignSite(t);
  // One tab for the four pages, each loaded afresh: a context each would cost Chromium a renderer each.
  const tab = await newPage(t, browser);

  const watch = async (t: Test, svc: TestService, mid: string) => {
    const sub = await Client.connect(svc.url);
    t.teardown(() => sub.close());
    await sub.request({ op: 'subscribe', mids: [mid] });
    return sub;
  };
  /** A service as shipped, for both attacks it must stop: each aims at a market of its own. */
  const shipped = await startTestService(t);

  t.test('a page of another origin cannot open /ingest, and no subscriber sees its price', async (t) => {
    const sub = await watch(t, shipped, MID);
    t.equal(await publishFromPage(tab, site, shipped), 'refused');
    t.same(await pricesSeen(shipped, sub, MID), [2.5], 'only the price published without a browser');
  });

  t.test('DNS rebinding: a page on a name that now resolves to the service neither publishes, nor reads, nor opens /ws', async (t) => {
    const sub = await watch(t, shipped, REBOUND_MID);
    t.same(await rebound(t, tab, shipped), { post: 421, read: 421, ws: 'refused' });
    t.same(await pricesSeen(shipped, sub, REBOUND_MID), [2.5], 'only the price published without a browser');
  });

  t.test('the same page succeeds on a service that answers to its name (the refusal above is the Host check)', async (t) => {
    const svc = await startTestService(t, { ALLOWED_HOSTS: REBOUND });
    const sub = await watch(t, svc, REBOUND_MID);
    t.same(await rebound(t, tab, svc), { post: 200, read: 200, ws: 'open' });
    t.same(await pricesSeen(svc, sub, REBOUND_MID), [PLANTED, 2.5]);
  });

  t.test('the same page publishes when its origin is in INGEST_ORIGINS (the refusal above is the origin check)', async (t) => {
    const svc = await startTestService(t, { INGEST_ORIGINS: site });
    const sub = await watch(t, svc, MID);
    t.equal(await publishFromPage(tab, site, svc), 'open: {"op":"ack","id":1,"status":1,"message":"Ingested 1 item"}');
    t.same(await pricesSeen(svc, sub, MID), [PLANTED, 2.5]);
  });
}
