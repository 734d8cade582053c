/**
 * The baseline: what a competent team would build without uWebSockets.js.
 *
 * - REST on node:http: the same routes and the same answers, byte for byte, read from the same
 *   Postgres with one query per request through a pg Pool (answers.ts, shared with the fastify
 *   peer).
 * - Odds on the `ws` library: a Map from market ID to its sockets; each update is serialised
 *   once per format into a Buffer and that Buffer is sent to every subscriber. Same frames,
 *   same subprotocols, same ingest socket (ingest.ts: `/ingest`, acked per message), same validation
 *   (src/ingest/validate-odds.ts) and encoders (src/odds/codec.ts) as the service, so only the server
 *   differs.
 *
 * Env: DATABASE_URL (required), PORT (0 = free port), HOST (127.0.0.1), PG_POOL_MAX (10).
 */
import http from 'node:http';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import { encodeJson, encodeProto } from '../../src/odds/codec.js';
import { oddsMessage, type OddsImage } from '../../src/odds/image.js';
import { newEpoch } from '../../src/odds/book.js';
import { BadRequest, HEALTH, MID, ROUTES, answer, errorBody, openPool, type Route } from './answers.js';
import { ingestSocket, serve } from './ingest.js';

const pool = openPool('bench-baseline');

// ---- REST ----

const JSON_HEADERS = { 'content-type': 'application/json' };

function reply(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { ...JSON_HEADERS, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const server = http.createServer((req, res) => {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path === '/health') return reply(res, 200, HEALTH);
  if (req.method !== 'GET') return reply(res, 405, errorBody(`${req.method} is not allowed`));
  if (!(ROUTES as readonly string[]).includes(path)) return reply(res, 404, errorBody(`no route for ${path}`));
  const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  answer(pool, path as Route, (name) => params.getAll(name)).then(
    (body) => reply(res, 200, body),
    (err: Error) => reply(res, err instanceof BadRequest ? 400 : 503, errorBody(err.message)),
  );
});
server.keepAliveTimeout = 65_000;

// ---- odds fan-out ----

type Format = 'json' | 'proto';
interface Subscriber extends WebSocket { format: Format; mids: Set<string> }

/** Subscribers per market: the heart of the baseline. */
const topics = new Map<string, Set<Subscriber>>();
const seqs = new Map<string, number>();
const latest = new Map<string, Latest>();
let knownMarkets = new Set<string>();
/** Above this much queued output a socket's frames are skipped (a slow consumer must not grow the heap). */
const MAX_BUFFERED = 1024 * 1024;
let skipped = 0;

const subscribers = new WebSocketServer({
  noServer: true,
  maxPayload: 256 * 1024,
  handleProtocols: (offered) => (offered.has('odds.v1.proto') ? 'odds.v1.proto' : offered.has('odds.v1.json') ? 'odds.v1.json' : false),
});
server.on('upgrade', (req, socket, head) => {
  const path = (req.url ?? '').split('?')[0];
  if (path === '/ws') subscribers.handleUpgrade(req, socket, head, (ws) => subscribers.emit('connection', ws, req));
  else if (path !== '/ingest') socket.destroy();
});

function sendText(ws: WebSocket, msg: Parameters<typeof encodeJson>[0], format: Format): void {
  if (format === 'json') ws.send(encodeJson(msg));
  else ws.send(encodeProto(msg), { binary: true });
}

subscribers.on('connection', (ws: Subscriber) => {
  ws.format = ws.protocol === 'odds.v1.proto' ? 'proto' : 'json';
  ws.mids = new Set();
  ws.on('message', (data: RawData) => {
    let msg: { op?: unknown; id?: unknown; mids?: unknown };
    try {
      msg = JSON.parse(data.toString());
    } catch {
      return sendText(ws, { op: 'ack', id: 0, status: 0, message: 'malformed JSON' }, ws.format);
    }
    const id = typeof msg.id === 'number' ? msg.id : 0;
    const mids = Array.isArray(msg.mids) ? [...new Set(msg.mids as unknown[])] : [];
    if ((msg.op !== 'subscribe' && msg.op !== 'unsubscribe') || mids.length === 0 || mids.length > 50 || !mids.every((m) => typeof m === 'string' && MID.test(m))) {
      return sendText(ws, { op: 'ack', id, status: 0, message: 'bad request' }, ws.format);
    }
    const list = mids as string[];
    if (msg.op === 'subscribe') {
      sendText(ws, { op: 'ack', id, status: 1, message: `Subscribed from market ${list.join(',')}` }, ws.format);
      for (const mid of list) {
        ws.mids.add(mid);
        let set = topics.get(mid);
        if (!set) topics.set(mid, (set = new Set()));
        set.add(ws);
        const entry = latest.get(mid);
        if (entry) ws.send(entry.frame(ws.format), { binary: ws.format === 'proto' });
      }
    } else {
      for (const mid of list) {
        ws.mids.delete(mid);
        topics.get(mid)?.delete(ws);
      }
      sendText(ws, { op: 'ack', id, status: 1, message: `Unsubscribed from market ${list.join(',')}` }, ws.format);
    }
  });
  ws.on('close', () => {
    for (const mid of ws.mids) {
      const set = topics.get(mid);
      set?.delete(ws);
      if (set?.size === 0) topics.delete(mid);
    }
  });
  ws.on('error', () => undefined);
});

/** The latest image of a market, encoded at most once per format, on first use. */
class Latest {
  private json: Buffer | undefined;
  private proto: Buffer | undefined;
  constructor(readonly msg: Parameters<typeof encodeJson>[0]) {}
  frame(format: Format): Buffer {
    return format === 'json' ? (this.json ??= Buffer.from(encodeJson(this.msg))) : (this.proto ??= Buffer.from(encodeProto(this.msg)));
  }
}

/** Frames carry an epoch as the service's do, so both send the same bytes per update. */
const EPOCH = newEpoch('m');

function publish(image: OddsImage): void {
  const mid = image.marketId;
  const seq = (seqs.get(mid) ?? 0) + 1;
  seqs.set(mid, seq);
  const entry = new Latest(oddsMessage(image, { epoch: EPOCH, seq, publishTime: Date.now() }));
  latest.set(mid, entry);
  const set = topics.get(mid);
  if (!set) return;
  for (const ws of set) {
    if (ws.readyState !== WebSocket.OPEN) continue;
    if (ws.bufferedAmount > MAX_BUFFERED) {
      skipped++;
      continue;
    }
    ws.send(entry.frame(ws.format), { binary: ws.format === 'proto' });
  }
}

const publishers = ingestSocket(server, () => knownMarkets, publish);

// ---- start ----

serve('baseline', server, pool, (known) => (knownMarkets = known), () => {
  if (skipped) process.stderr.write(`baseline skipped ${skipped} frames to slow sockets\n`);
  for (const ws of subscribers.clients) ws.terminate();
  for (const ws of publishers.clients) ws.terminate();
});
