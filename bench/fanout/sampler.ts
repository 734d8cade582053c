/**
 * The sampled sockets of the fan-out benchmark: a few real `ws` clients that decode every frame
 * (JSON, or protobuf with the service's own decodeServerProto) and measure, per odds frame,
 * publish-to-receive latency (receive time minus the publisher's `ts`, set when it sent the
 * update) and server-to-receive latency (minus the server's `pt`), and check `seq` per market:
 * a gap is a lost frame, `con:true` a conflated one. Runs in its own process, at normal
 * priority, while the counting clients run niced, so its clock readings are not queued behind them.
 * For the Socket.IO peer the sampled sockets are socket.io-client sockets with the default parser,
 * reading the `odds` events; with `deflate`, the `ws` clients offer permessage-deflate and inflate.
 */
import WebSocket from 'ws';
import { io } from 'socket.io-client';
import { decodeServerProto } from '../../src/odds/codec.js';
import type { ServerMessage } from '../../src/odds/messages.js';
import { Histogram } from '../lib/common.js';

type Command =
  | { type: 'connect'; url: string; protocol: string; sockets: string[][]; socketio?: boolean; deflate?: boolean }
  | { type: 'reset' }
  | { type: 'stats' }
  | { type: 'close' };

const now = () => performance.timeOrigin + performance.now();
const fromTs = new Histogram();
const fromPt = new Histogram();
let frames = 0;
let lost = 0;
let conflated = 0;
let reordered = 0;
let acks = 0;
let closed = 0;
const closers: (() => void)[] = [];

function onFrame(seqs: Map<string, number>, m: ServerMessage, at: number): void {
  if (m.op === 'ack') {
    acks++;
    return;
  }
  if (m.op !== 'odds') return;
  frames++;
  fromTs.recordMs(at - m.ts);
  fromPt.recordMs(at - m.pt);
  const last = seqs.get(m.mid);
  if (m.con) conflated++;
  else if (last !== undefined) {
    if (m.seq > last + 1) lost += m.seq - last - 1;
    else if (m.seq <= last) reordered++;
  }
  seqs.set(m.mid, m.seq);
}

/** Socket.IO: `url` is the server's http:// address. */
async function connectSocketIo(url: string, sockets: string[][]): Promise<{ ok: number; failed: number }> {
  let ok = 0;
  let failed = 0;
  await Promise.all(sockets.map((mids, i) => new Promise<void>((done) => {
    const socket = io(url, { transports: ['websocket'], forceNew: true, reconnection: false });
    const seqs = new Map<string, number>();
    socket.on('odds', (m: ServerMessage) => onFrame(seqs, m, now()));
    socket.on('connect', () => {
      socket.emit('subscribe', { id: i + 1, mids }, (ack: ServerMessage) => onFrame(seqs, ack, now()));
      ok++;
      done();
    });
    socket.on('connect_error', (err) => {
      process.stderr.write(`sampler: ${err.message}\n`);
      failed++;
      done();
    });
    socket.on('disconnect', () => closed++);
    closers.push(() => socket.disconnect());
  })));
  return { ok, failed };
}

async function connect(url: string, protocol: string, sockets: string[][], deflate: boolean): Promise<{ ok: number; failed: number }> {
  let ok = 0;
  let failed = 0;
  await Promise.all(sockets.map((mids, i) => new Promise<void>((done) => {
    const ws = new WebSocket(url, protocol, { perMessageDeflate: deflate });
    const seqs = new Map<string, number>();
    ws.binaryType = 'nodebuffer';
    ws.on('open', () => {
      ws.send(JSON.stringify({ op: 'subscribe', id: i + 1, mids }));
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
    ws.on('close', () => closed++);
    closers.push(() => ws.terminate());
  })));
  return { ok, failed };
}

process.on('message', (m: Command) => {
  switch (m.type) {
    case 'connect':
      (m.socketio ? connectSocketIo(m.url, m.sockets) : connect(m.url, m.protocol, m.sockets, m.deflate === true))
        .then((r) => process.send!({ type: 'connected', ...r }));
      break;
    case 'reset':
      fromTs.reset();
      fromPt.reset();
      frames = lost = conflated = reordered = 0;
      process.send!({ type: 'reset' });
      break;
    case 'stats':
      process.send!({ type: 'stats', frames, lost, conflated, reordered, acks, closed, fromTs: fromTs.toJSON(), fromPt: fromPt.toJSON(), cpu: process.cpuUsage() });
      break;
    case 'close':
      for (const close of closers) close();
      process.send!({ type: 'closed' }, () => process.exit(0));
      break;
  }
});
process.on('disconnect', () => process.exit(0));
