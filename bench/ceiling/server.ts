/**
 * The ceiling: the least a uWebSockets.js server can do per request or per delivery here.
 *
 * - REST: every GET is answered with a static body looked up by URL (the bodies the service
 *   returned for the same URLs, so the same sizes), with the same status line and content-type
 *   the service writes. No parsing, no model, no error handling: what is left is the library
 *   and the kernel.
 * - Odds: `/ws` subscribes a socket to one uWS topic per market and format, and acks; `/ingest`
 *   parses a batch, stamps `seq` and `pt`, encodes each update once per format that has
 *   subscribers (the service's own encoders, so the same frames) and publishes it. No
 *   validation, no book, no slow-consumer handling, no metrics.
 *
 * Env: BODIES_FILE (JSON object, URL with query -> body; a bare path is the fallback for its
 * other URLs; without it every GET is a 404), PORT (0 = free port), HOST.
 */
import { readFileSync } from 'node:fs';
import type * as Uws from 'uWebSockets.js';
import { uwsBuild } from '../../src/http/uws.js';

// The same build the service loads, so the ceiling and the service differ only in what they do.
const uws = uwsBuild.lib;
import { encodeJson, encodeProto } from '../../src/odds/codec.js';
import type { ServerMessage, WireOddsImage } from '../../src/odds/messages.js';
import { newEpoch } from '../../src/odds/book.js';

/** Frames carry an epoch as the service's do, so both send the same bytes per update. */
const EPOCH = newEpoch('m');

const file = process.env.BODIES_FILE;
const bodies = new Map<string, Buffer>(file ? Object.entries(JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>).map(([k, v]) => [k, Buffer.from(v)]) : []);
const missing = Buffer.from('{"status":0,"message":"no body for this URL"}');

const app = uws.App();
app.get('/*', (res, req) => {
  const q = req.getQuery();
  // A URL without a body of its own (the cache-miss variants) gets its path's representative body.
  const body = bodies.get(q ? `${req.getUrl()}?${q}` : req.getUrl()) ?? bodies.get(req.getUrl());
  res.cork(() => {
    res.writeStatus(body ? '200 OK' : '404 Not Found').writeHeader('content-type', 'application/json').end(body ?? missing);
  });
});

// ---- odds ----

type Format = 'json' | 'proto';
const PREFIX: Record<Format, string> = { json: 'j/', proto: 'p/' };
const encode = (format: Format, msg: ServerMessage) => (format === 'json' ? encodeJson(msg) : encodeProto(msg));
const seqs = new Map<string, number>();

const upgradeWith = (protocols: string[]) => (res: Uws.HttpResponse, req: Uws.HttpRequest, context: Uws.us_socket_context_t) => {
  const offered = req.getHeader('sec-websocket-protocol').split(',').map((p) => p.trim());
  const protocol = protocols.find((p) => offered.includes(p)) ?? '';
  const format: Format = protocol === 'odds.v1.proto' ? 'proto' : 'json';
  res.upgrade({ format }, req.getHeader('sec-websocket-key'), protocol, req.getHeader('sec-websocket-extensions'), context);
};

app.ws<{ format: Format }>('/ws', {
  maxPayloadLength: 256 * 1024,
  maxBackpressure: 64 * 1024 * 1024,
  idleTimeout: 32,
  upgrade: upgradeWith(['odds.v1.proto', 'odds.v1.json']),
  message: (ws, data) => {
    const { format } = ws.getUserData();
    const msg = JSON.parse(Buffer.from(data).toString()) as { id: number; mids: string[] };
    for (const mid of msg.mids) ws.subscribe(PREFIX[format] + mid);
    ws.send(encode(format, { op: 'ack', id: msg.id, status: 1, message: `Subscribed from market ${msg.mids.join(',')}` }), format === 'proto');
  },
});

app.ws('/ingest', {
  maxPayloadLength: 1024 * 1024,
  idleTimeout: 32,
  upgrade: upgradeWith(['odds.v1.json']),
  message: (ws, data) => {
    const body = JSON.parse(Buffer.from(data).toString()) as { id: number; data: WireOddsImage[] };
    const pt = Date.now();
    for (const image of body.data) {
      const seq = (seqs.get(image.mid) ?? 0) + 1;
      seqs.set(image.mid, seq);
      const msg: ServerMessage = { op: 'odds', mid: image.mid, epoch: EPOCH, seq, ts: image.ts, pt, st: image.st, ip: image.ip, con: false, cf: false, r: image.r };
      for (const format of ['json', 'proto'] as const) {
        const topic = PREFIX[format] + image.mid;
        if (app.numSubscribers(topic)) app.publish(topic, encode(format, msg), format === 'proto');
      }
    }
    ws.send(JSON.stringify({ op: 'ack', id: body.id, status: 1, message: `Ingested ${body.data.length} items` }));
  },
});

const host = process.env.HOST || '127.0.0.1';
app.listen(host, Number(process.env.PORT || 0), (socket) => {
  if (!socket) {
    process.stderr.write('ceiling: cannot listen\n');
    process.exit(1);
  }
  process.stdout.write(`ceiling listening on http://${host}:${uws.us_socket_local_port(socket)}\n`);
});

process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
