/**
 * The sampled sockets of the fan-out benchmark: a few real `ws` clients that decode every frame
 * (JSON, or protobuf with the service's own decodeServerProto) and measure, per odds frame,
 * publish-to-receive latency (receive time minus the publisher's `ts`, set when it sent the
 * update) and server-to-receive latency (minus the server's `pt`), and check `seq` per market:
 * a gap is a lost frame, `con:true` a frame after a slow consumer's skip, `cf:true` one after the
 * socket's own conflation held updates back (a gap before either is no loss). The last `seq` of
 * each socket's markets is kept for the newest check. Runs in its own process, at normal
 * priority, while the counting clients run niced, so its clock readings are not queued behind them.
 * For the Socket.IO peer the sampled sockets are socket.io-client sockets with the default parser,
 * reading the `odds` events; with `deflate`, the `ws` clients offer permessage-deflate and inflate.
 */
import WebSocket from 'ws';
import { io } from 'socket.io-client';
import { decodeServerProto } from '../../src/odds/codec.js';
import type { ServerMessage } from '../../src/odds/messages.js';
import { Histogram } from '../lib/statistics.js';
import type { Subscribe } from './raw-client.js';
import { newest } from './newest.js';

type Command =
  | { type: 'connect'; url: string; protocol: string; sockets: Subscribe[][]; socketio?: boolean; deflate?: boolean }
  | { type: 'subscribe'; sockets: Subscribe[][] }
  | { type: 'reset' }
  | { type: 'stats' }
  | { type: 'newest'; expected: Record<string, number> }
  | { type: 'close' };

/** One sampled socket: its markets, the last seq of each, and how to send it a request. */
interface Sampled {
  mids: string[];
  seqs: Map<string, number>;
  request(msg: Subscribe & { id: number }): void;
  closed: boolean;
}

const now = () => performance.timeOrigin + performance.now();
const fromTs = new Histogram();
const fromPt = new Histogram();
let frames = 0;
/** Odds frames since the start, never reset. */
let framesTotal = 0;
let lost = 0;
let conflated = 0;
let thinned = 0;
let reordered = 0;
let acks = 0;
let refused = 0;
let lastRefusal = '';
let closed = 0;
const closers: (() => void)[] = [];
const sampled: Sampled[] = [];
let nextId = 1;

function onFrame(seqs: Map<string, number>, m: ServerMessage, at: number): void {
  if (m.op === 'ack') {
    acks++;
    if (m.status !== 1) {
      refused++;
      lastRefusal = m.message;
    }
    return;
  }
  // A delta is a market's update like an image: it carries ts, pt and seq too.
  if (m.op !== 'odds' && m.op !== 'delta') return;
  frames++;
  framesTotal++;
  fromTs.recordMs(at - m.ts);
  fromPt.recordMs(at - m.pt);
  const last = seqs.get(m.mid);
  if (m.op === 'odds' && m.con) conflated++;
  else if (m.op === 'odds' && m.cf) thinned++;
  else if (last !== undefined) {
    if (m.seq > last + 1) lost += m.seq - last - 1;
    else if (m.seq <= last) reordered++;
  }
  seqs.set(m.mid, m.seq);
}

/** Socket.IO: `url` is the server's http:// address. */
async function connectSocketIo(url: string, sockets: Subscribe[][]): Promise<{ ok: number; failed: number }> {
  let ok = 0;
  let failed = 0;
  await Promise.all(sockets.map((requests) => new Promise<void>((done) => {
    const socket = io(url, { transports: ['websocket'], forceNew: true, reconnection: false });
    const seqs = new Map<string, number>();
    const one: Sampled = {
      mids: midsOf(requests), seqs, closed: false,
      request: (msg) => socket.emit('subscribe', msg, (ack: ServerMessage) => onFrame(seqs, ack, now())),
    };
    sampled.push(one);
    socket.on('odds', (m: ServerMessage) => onFrame(seqs, m, now()));
    socket.on('connect', () => {
      for (const r of requests) one.request({ id: nextId++, ...r });
      ok++;
      done();
    });
    socket.on('connect_error', (err) => {
      process.stderr.write(`sampler: ${err.message}\n`);
      failed++;
      done();
    });
    socket.on('disconnect', () => {
      closed++;
      one.closed = true;
    });
    closers.push(() => socket.disconnect());
  })));
  return { ok, failed };
}

async function connect(url: string, protocol: string, sockets: Subscribe[][], deflate: boolean): Promise<{ ok: number; failed: number }> {
  let ok = 0;
  let failed = 0;
  await Promise.all(sockets.map((requests) => new Promise<void>((done) => {
    const ws = new WebSocket(url, protocol, { perMessageDeflate: deflate });
    const seqs = new Map<string, number>();
    const one: Sampled = { mids: midsOf(requests), seqs, closed: false, request: (msg) => ws.send(JSON.stringify({ op: 'subscribe', ...msg })) };
    sampled.push(one);
    ws.binaryType = 'nodebuffer';
    ws.on('open', () => {
      for (const r of requests) one.request({ id: nextId++, ...r });
      ok++;
      done();
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      const at = now();
      const m = isBinary ? decodeServerProto(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)) : (JSON.parse(data.toString()) as ServerMessage);
      onFrame(seqs, m, at);
    });
    ws.on('error', (err) => {
      process.stderr.write(`sampler: ${err.message}\n`);
      failed++;
      done();
    });
    ws.on('close', () => {
      closed++;
      one.closed = true;
    });
    closers.push(() => ws.terminate());
  })));
  return { ok, failed };
}

const midsOf = (requests: Subscribe[]): string[] => [...new Set(requests.flatMap((r) => r.mids))];


process.on('message', (m: Command) => {
  switch (m.type) {
    case 'connect':
      (m.socketio ? connectSocketIo(m.url, m.sockets) : connect(m.url, m.protocol, m.sockets, m.deflate === true))
        .then((r) => process.send!({ type: 'connected', ...r }));
      break;
    case 'subscribe':
      for (const [i, s] of sampled.entries()) if (!s.closed && m.sockets[i]) for (const r of m.sockets[i]) s.request({ id: nextId++, ...r });
      process.send!({ type: 'subscribed' });
      break;
    case 'reset':
      fromTs.reset();
      fromPt.reset();
      frames = lost = conflated = thinned = reordered = 0;
      process.send!({ type: 'reset' });
      break;
    case 'stats':
      process.send!({
        type: 'stats', frames, framesTotal, lost, conflated, thinned, reordered, acks, refused, lastRefusal, closed,
        fromTs: fromTs.toJSON(), fromPt: fromPt.toJSON(), cpu: process.cpuUsage(),
      });
      break;
    case 'newest':
      process.send!({ type: 'newest', ...newest(sampled.map((x) => ({ closed: x.closed, mids: x.mids, last: x.seqs })), m.expected, 'sampled socket') });
      break;
    case 'close':
      for (const close of closers) close();
      process.send!({ type: 'closed' }, () => process.exit(0));
      break;
  }
});
process.on('disconnect', () => process.exit(0));
