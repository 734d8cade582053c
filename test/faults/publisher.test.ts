import t, { type Test } from 'tap';
import { connect, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { sqlClient } from '../helpers/db.js';
import { scrape, value, type Scrape } from '../helpers/metrics.js';
import { http as get, postJson, startTestService } from '../helpers/service.js';
import { Client } from '../helpers/ws.js';
import { closedByPeer, portsOf, readByPeer } from '../helpers/net.js';
import { waitFor } from '../helpers/wait.js';
import { captureErrorLogs, eventually } from './lib.js';

/**
 * A publisher that vanishes mid-batch: over HTTP with only part of the body
 * sent, over the /ingest socket with only part of a frame (or of a
 * fragmented message) sent, and over the socket with a whole batch sent but
 * the socket gone before the ack. Nothing partial may be written or
 * published; a whole batch is applied whole or not at all.
 */
const errorLogs = captureErrorLogs(t);
const uncaught: string[] = [];
const onUncaught = (err: Error) => uncaught.push(String(err.stack ?? err).split('\n').slice(0, 4).join(' | '));
process.on('uncaughtException', onUncaught);
t.teardown(() => void process.off('uncaughtException', onUncaught));

const svc = await startTestService(t);
const db = await sqlClient(t, svc.databaseUrl);
const { port } = new URL(svc.url);
const SPORT = 91;
const EVENTS = 40;
const setup = await postJson(svc.url, '/api/v1/ingest', { data: [{ kind: 'sport', si: SPORT, na: 'Publisher Faults', a: true }] });
if (setup.status !== 200) throw new Error(`setup refused: ${setup.text}`);

/** Demo runner markets, one per scenario 1..8 (1.200001008 is a session: runner ladders are no prices it can have). */
const DEMO_RUNNER_MARKETS = ['1.200001001', '1.200001002', '1.200001003', '1.200001004', '1.200001005', '1.200001006', '1.200001007', '1.200004001'];
const demoMid = (s: number) => DEMO_RUNNER_MARKETS[s - 1];
const newMids = (s: number) => Array.from({ length: EVENTS }, (_, j) => `p.${s}.${j}`);
const mids = (s: number) => [...newMids(s), demoMid(s)];

/** Odds image heavy enough (10 runners x 10 levels a side) that a batch spans many TCP segments. */
const heavyImage = (mid: string) => ({
  kind: 'odds', mid, ts: Date.now(), st: 'OPEN', ip: true,
  r: Array.from({ length: 10 }, (_, i) => ({
    rid: i + 1, st: 'ACTIVE',
    b: Array.from({ length: 10 }, (_, k) => [2 + i - k / 100, 100 + k]),
    l: Array.from({ length: 10 }, (_, k) => [2.02 + i + k / 100, 90 + k]),
  })),
});

/** Scenario s's batch: a league, 40 events with a market each, an image of each new market and of one demo market. */
function batch(s: number): Record<string, unknown>[] {
  const li = 9100 + s;
  const items: Record<string, unknown>[] = [{ kind: 'league', li, si: SPORT, na: `League ${s}` }];
  for (let j = 0; j < EVENTS; j++) {
    const eid = 91000000 + s * 1000 + j;
    items.push({ kind: 'event', eid, na: `Event ${s}.${j}`, st: '2031-01-01T12:00:00.000Z', si: SPORT, li });
    items.push({ kind: 'market', mid: `p.${s}.${j}`, eid, na: 'Match Odds', ty: 'match-odd', r: [{ rid: 1, na: 'A' }, { rid: 2, na: 'B' }] });
  }
  for (const mid of mids(s)) items.push(heavyImage(mid));
  return items;
}

/** What of scenario s reached Postgres. */
async function stored(s: number): Promise<{ leagues: number; events: number; markets: number }> {
  const { rows } = await db.query(
    `SELECT (SELECT count(*) FROM leagues WHERE li = $1)::int AS leagues,
            (SELECT count(*) FROM events WHERE eid BETWEEN $2 AND $3)::int AS events,
            (SELECT count(*) FROM markets WHERE mid LIKE $4)::int AS markets`,
    [9100 + s, 91000000 + s * 1000, 91000000 + s * 1000 + 999, `p.${s}.%`],
  );
  return rows[0];
}
const NOTHING = { leagues: 0, events: 0, markets: 0 };
const EVERYTHING = { leagues: 1, events: EVENTS, markets: EVENTS };

const batchesTotal = (m: Scrape) => ['ok', 'rejected', 'unavailable'].reduce((n, o) => n + value(m, 'odds_ingest_batches_total', `outcome="${o}"`), 0);

// One subscriber on every market any scenario touches, before anything is sent.
const sub = await Client.connect(svc.url);
t.teardown(() => sub.close());
for (let s = 1; s <= 8; s++) {
  const ack = await sub.request({ op: 'subscribe', mids: mids(s) });
  if (ack.status !== 1) throw new Error(ack.message);
}
const oddsFrames = (s: number) => mids(s).reduce((n, mid) => n + sub.oddsOf(mid).length, 0);
const figures: string[] = [];
const http_ = async (path: string) => (await get(svc.url, path)).text;

/**
 * Sends the request line, headers and the first `bytes` of the body, waits until the server has read
 * them (it is then waiting for the rest), then vanishes, and waits until the server has closed its end.
 */
async function partialPost(body: Buffer, bytes: number, vanish: (sock: Socket) => void): Promise<{ answer: string; serverClosed: boolean }> {
  const sock = connect(Number(port), '127.0.0.1');
  await new Promise((ok) => sock.once('connect', ok));
  let answer = '';
  let serverClosed = false;
  sock.on('data', (d) => (answer += d));
  sock.on('end', () => (serverClosed = true));
  sock.on('error', () => undefined);
  sock.write(`POST /api/v1/ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
  sock.write(body.subarray(0, bytes));
  await waitFor(() => readByPeer(sock), `the server read the ${bytes} bytes of body sent`, 10_000);
  const ports = portsOf(sock);
  vanish(sock);
  // Whatever it answers, it has answered once it closed its end: after that nothing more can come.
  await waitFor(() => closedByPeer(ports), 'the server closed its end of the connection the client left', 10_000);
  sock.destroy();
  return { answer, serverClosed };
}

/** Destroys a socket once the server has read all it was sent, and waits until the server has closed its end. */
async function vanishOnceRead(sock: Socket, what: string): Promise<void> {
  await waitFor(() => readByPeer(sock), `the server read ${what}`, 10_000);
  const ports = portsOf(sock);
  sock.destroy();
  await waitFor(() => closedByPeer(ports), 'the server closed its end of the socket the publisher left', 10_000);
}

/** A raw WebSocket handshake on /ingest, so the test can write broken frames. */
async function rawIngestSocket(): Promise<Socket> {
  const sock = connect(Number(port), '127.0.0.1');
  sock.on('error', () => undefined);
  await new Promise((ok) => sock.once('connect', ok));
  sock.write(`GET /ingest HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: odds.v1.json\r\n\r\n`);
  const head = await new Promise<string>((ok) => sock.once('data', (d) => ok(d.toString())));
  if (!head.startsWith('HTTP/1.1 101')) throw new Error(`upgrade refused: ${head}`);
  return sock;
}

/** A masked client frame (RFC 6455 5.2). */
function frame(payload: Buffer, opcode: number, fin: boolean): Buffer {
  const mask = randomBytes(4);
  const len = payload.length;
  const head = len < 126 ? Buffer.from([0, 0x80 | len]) : len < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
  if (len >= 126 && len < 65536) { head[1] = 0x80 | 126; head.writeUInt16BE(len, 2); }
  if (len >= 65536) { head[1] = 0x80 | 127; head.writeBigUInt64BE(BigInt(len), 2); }
  head[0] = (fin ? 0x80 : 0) | opcode;
  const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]));
  return Buffer.concat([head, mask, masked]);
}

/** Checks scenario s left nothing: no row, no odds frame, no batch counted. */
async function leftNothing(t: Test, s: number, before: Scrape): Promise<void> {
  await sub.settled();
  t.same(await stored(s), NOTHING, 'no row of the partial batch in Postgres');
  t.equal(oddsFrames(s), 0, 'the subscriber got no odds frame of its markets');
  t.equal(batchesTotal(await scrape(svc.url)) - batchesTotal(before), 0, 'the batch never reached ingest (odds_ingest_batches_total unchanged)');
}

t.test('HTTP: half the body, then the socket destroyed: nothing written or published', async (t) => {
  const before = await scrape(svc.url);
  const body = Buffer.from(JSON.stringify({ data: batch(1) }));
  const r = await partialPost(body, body.length >> 1, (s) => s.destroy());
  t.equal(r.answer, '', 'no answer was sent for a body that never arrived');
  await leftNothing(t, 1, before);
  const after = await eventually(() => scrape(svc.url), (m) => value(m, 'odds_http_requests_total', 'route="/api/v1/ingest"', 'status="499"') > value(before, 'odds_http_requests_total', 'route="/api/v1/ingest"', 'status="499"'), 2000);
  t.equal(value(after, 'odds_http_requests_total', 'route="/api/v1/ingest"', 'status="499"') - value(before, 'odds_http_requests_total', 'route="/api/v1/ingest"', 'status="499"'), 1, 'counted as 499, client went away');
  figures.push(`HTTP half body: ${body.length >> 1}/${body.length} bytes sent, then destroyed`);
});

t.test('HTTP: all but the last byte, then the socket destroyed: nothing written or published', async (t) => {
  const before = await scrape(svc.url);
  const body = Buffer.from(JSON.stringify({ data: batch(2) }));
  const r = await partialPost(body, body.length - 1, (s) => s.destroy());
  t.equal(r.answer, '');
  await leftNothing(t, 2, before);
  figures.push(`HTTP all but 1 byte: ${body.length - 1}/${body.length} bytes sent, then destroyed`);
});

t.test('HTTP: half the body, then a half-close (FIN): nothing written or published, connection not answered 200', async (t) => {
  const before = await scrape(svc.url);
  const body = Buffer.from(JSON.stringify({ data: batch(3) }));
  const r = await partialPost(body, body.length >> 1, (s) => s.end());
  t.notMatch(r.answer, /^HTTP\/1\.1 200/, `no 200 for an incomplete body (answer: ${JSON.stringify(r.answer.slice(0, 60))})`);
  await leftNothing(t, 3, before);
  figures.push(`HTTP half body + FIN: server ${r.serverClosed ? 'closed the connection' : 'kept the connection open'}, answer ${JSON.stringify(r.answer.split('\r\n')[0] ?? '')}`);
});

t.test('/ingest socket: half a frame, then the socket destroyed: nothing written or published', async (t) => {
  const before = await scrape(svc.url);
  const sock = await rawIngestSocket();
  const f = frame(Buffer.from(JSON.stringify({ id: 4, data: batch(4) })), 0x1, true);
  sock.write(f.subarray(0, f.length >> 1));
  await vanishOnceRead(sock, 'the half frame sent');
  await leftNothing(t, 4, before);
  figures.push(`/ingest half frame: ${f.length >> 1}/${f.length} bytes sent, then destroyed`);
});

t.test('/ingest socket: first fragment of a fragmented message, then the socket destroyed: nothing written or published', async (t) => {
  const before = await scrape(svc.url);
  const sock = await rawIngestSocket();
  const payload = Buffer.from(JSON.stringify({ id: 5, data: batch(5) }));
  sock.write(frame(payload.subarray(0, payload.length >> 1), 0x1, false)); // text, FIN clear: more to come
  await vanishOnceRead(sock, 'the first fragment sent');
  await leftNothing(t, 5, before);
});

/** Sends a whole batch on /ingest and drops the socket before the ack can arrive; reports what happened to it. */
async function sendThenDrop(t: Test, s: number, drop: (ws: WebSocket) => void): Promise<void> {
  const before = await scrape(svc.url);
  const pub = new WebSocket(svc.url.replace(/^http/, 'ws') + '/ingest', ['odds.v1.json']);
  pub.on('error', () => undefined);
  await new Promise((ok) => pub.once('open', ok));
  let acked = false;
  pub.on('message', () => (acked = true));
  const closed = new Promise((ok) => pub.once('close', ok));
  pub.send(JSON.stringify({ id: s, data: batch(s) }), () => drop(pub));
  await closed;
  // Whatever the server does with it, it has done once the batch counter moved, or never will. The
  // server reads a batch sent before the drop (it moves at once here); the bound only has to outlast a
  // busy machine's slowest commit, or a late one would be counted by the next test (3 s once was not).
  const after = await eventually(() => scrape(svc.url), (m) => batchesTotal(m) > batchesTotal(before), 20_000);
  const counted = batchesTotal(after) - batchesTotal(before);
  await sub.settled();
  const rows = await stored(s);
  const frames = oddsFrames(s);
  t.notOk(acked, 'the socket was gone before the ack');
  t.ok(counted === 0 || counted === 1, `counted ${counted} batch`);
  if (counted === 1 && value(after, 'odds_ingest_batches_total', 'outcome="ok"') > value(before, 'odds_ingest_batches_total', 'outcome="ok"')) {
    t.same(rows, EVERYTHING, 'applied: every row of the batch is in Postgres');
    t.equal(frames, mids(s).length, 'applied: one odds frame per image of the batch');
  } else {
    t.same(rows, NOTHING, 'not applied: no row');
    t.equal(frames, 0, 'not applied: no odds frame');
  }
  figures.push(`/ingest whole batch then ${drop.name}: ${counted && rows.events ? 'applied whole' : 'not applied'} (${rows.events} events, ${frames} odds frames)`);
}

t.test('/ingest socket: a whole batch, then terminated before the ack: applied whole or not at all', async (t) => {
  await sendThenDrop(t, 6, function terminate(ws) { ws.terminate(); });
});

t.test('/ingest socket: a whole batch, then closed cleanly before the ack: applied whole or not at all', async (t) => {
  await sendThenDrop(t, 7, function close(ws) { ws.close(); });
});

t.test('the service still takes ingest on both routes and publishes it', async (t) => {
  const items = batch(8);
  const images = items.filter((i) => i.kind === 'odds');
  const http = await postJson(svc.url, '/api/v1/ingest', { data: items.filter((i) => i.kind !== 'odds') }); // league, events, markets
  t.same(http.body, { status: 1, message: `Ingested ${1 + 2 * EVENTS} items` });
  const pub = new WebSocket(svc.url.replace(/^http/, 'ws') + '/ingest', ['odds.v1.json']);
  t.teardown(() => pub.close());
  await new Promise((ok) => pub.once('open', ok));
  const ack = new Promise<string>((ok) => pub.once('message', (d) => ok(d.toString())));
  // Odds name markets acked just above; validation reads the NOTIFY-fed read model, so wait until it has them.
  await eventually(() => http_(`/api/v1/events/markets?eid=${91000000 + 8 * 1000 + EVENTS - 1}`), (r) => r.includes('p.8.'), 5000, 20);
  pub.send(JSON.stringify({ id: 88, data: images }));
  t.same(JSON.parse(await ack), { op: 'ack', id: 88, status: 1, message: `Ingested ${images.length} items` });
  await sub.next((f) => f.op === 'odds' && f.mid === demoMid(8));
  await sub.settled();
  t.equal(oddsFrames(8), mids(8).length, 'one frame per image');
  t.same(await stored(8), EVERYTHING);
});

t.test('no uncaught exception and nothing logged as an error', async (t) => {
  t.same(uncaught, [], 'no uncaught exception');
  t.same(errorLogs, [], 'no error logged');
  t.equal(sub.ws.readyState, WebSocket.OPEN, 'the subscriber stayed connected throughout');
  for (const f of figures) t.comment(f);
});
