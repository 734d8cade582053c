/**
 * Fan-out load: thousands of subscriber sockets in one process, as cheap as a client can be, so
 * the load generator is not what is measured. Plain TCP sockets speak just enough WebSocket
 * (handshake, one masked subscribe frame, pong) and count frames by reading headers only,
 * skipping payloads; every read lands in one shared buffer (net `onread`), nothing is allocated
 * per frame. To keep the number of reads down, each socket pauses after a read and all are
 * resumed every `cycleMs`: frames wait in the kernel meanwhile (a few KB), which costs the
 * server nothing. Latency and sequence checks are the sampler's job (sampler.ts).
 *
 * Every byte read after the handshake is counted, for the bytes per delivered frame. With
 * `extensions`, the handshake offers permessage-deflate; payloads are then not inflated, and a
 * compressed data frame is counted as odds, except while a socket still awaits acks of its
 * subscribe requests: the service compresses those too, and they come before any odds frame they
 * cause, so only those first frames are inflated to be told apart.
 * A frame is counted once its last byte has been read, so a count never includes a frame still
 * on its way.
 *
 * While tracking (the firehose), each JSON odds frame's `mid` and `seq` are read from its first
 * bytes and kept per socket and market, so that the newest check can tell whether every socket
 * ended with the newest image of each of its markets.
 *
 * A child process (fork) driven over IPC: connect, counts, cycle, subscribe (more requests on the
 * connected sockets), track, newest, detail, close.
 */
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { constants, inflateRawSync } from 'node:zlib';
import { newest } from './newest.js';
import { eachLimit } from '../../src/lib/serial.js';

/** One subscribe request: its markets and, if asked, ladder depth and conflation interval. */
export interface Subscribe {
  mids: string[];
  /** Events to take by filter (bench:scale), and ladder deltas when the service offers them. */
  eids?: number[];
  delta?: boolean;
  since?: { epoch: string; seqs: Record<string, number> };
  depth?: number;
  conflate?: number;
}

export type { Newest } from './newest.js';

interface Connect {
  type: 'connect';
  host: string;
  port: number;
  path: string;
  protocol: string;
  /** Each socket's subscribe requests, sent once its handshake is answered. */
  sockets: Subscribe[][];
  localAddresses: string[];
  concurrency: number;
  /** Sec-WebSocket-Extensions to offer, if any. */
  extensions?: string;
  /** Per socket, the `seq` of each market it already holds (a resumed socket starts from them). */
  held?: Record<string, number>[];
  /** Each socket connects at a random moment within this many ms (a resume). */
  spreadMs?: number;
}

/** Every open socket cut at once, no close frame, and each connected again to `port` resuming with `since` in `epoch`. */
interface Resume {
  type: 'resume';
  host: string;
  port: number;
  epoch: string;
  localAddresses: string[];
  concurrency: number;
  spreadMs: number;
}

type Command = Connect | Resume | { type: 'counts' } | { type: 'cycle'; ms: number } | { type: 'subscribe'; sockets: Subscribe[][] } | { type: 'track'; on: boolean }
  | { type: 'newest'; expected: Record<string, number> } | { type: 'detail' } | { type: 'close' };

/** Bytes of an odds frame kept for reading its `mid` and `seq`: `{"op":"odds","mid":"…","epoch":"…","seq":…` fits. */
const HEAD = 128;

interface State {
  sock: net.Socket;
  handshake: string | undefined;
  /** Header bytes of the frame being read. */
  hdr: Buffer;
  hdrLen: number;
  /** Payload bytes of the current frame still to come, and how far into it we are. */
  left: number;
  pos: number;
  opcode: number;
  /** RSV1 of the current frame: its payload is deflated. */
  deflated: boolean;
  /** Subscribe requests sent and not yet acked. */
  pendingAcks: number;
  /** The current compressed frame's payload, kept to be inflated while acks are pending. */
  compressed: Buffer[] | undefined;
  /** What the current frame is, once classified (counted when it ends). */
  kind: Kind;
  /** Odds frames this socket received whole. */
  odds: number;
  /** Its markets, and while tracking the `seq` of the last odds frame of each. */
  mids: string[];
  last: Map<string, number>;
  /** The current frame's `mid` and `seq` are read at its end (tracking a JSON data frame). */
  tracked: boolean;
  head: Buffer | undefined;
  /** Control frame payload (ping), kept to echo in the pong. */
  ctrl: number[] | undefined;
  paused: boolean;
  closed: boolean;
  /** Connects this socket's client again after a refusal that said when. */
  retry: ((ms: number) => void) | undefined;
}

const shared = Buffer.allocUnsafe(256 * 1024);
const sockets: State[] = [];
let paused: State[] = [];
let cycleMs = 0;
let cycleTimer: NodeJS.Timeout | undefined;
let odds = 0;
let acks = 0;
let other = 0;
let closed = 0;
let reads = 0;
let bytes = 0;
/** Sockets whose handshake answer accepted permessage-deflate. */
let deflating = 0;
let binary = false;
let tracking = false;
/** Refused handshakes that were retried, by status line. */
const refused = new Map<string, number>();

const enum Kind { None, Odds, Ack, Other }

/** A client frame, masked with a zero key (allowed; the payload then goes as is). */
function clientFrame(opcode: number, payload: Buffer): Buffer {
  const len = payload.length;
  const head = len < 126 ? Buffer.from([0x80 | opcode, 0x80 | len]) : Buffer.from([0x80 | opcode, 0x80 | 126, len >> 8, len & 0xff]);
  return Buffer.concat([head, Buffer.alloc(4), payload]);
}

/**
 * Which server message a frame is, from one byte: `{"op":"o...` (odds) or `{"op":"d...` (delta) in
 * JSON, field 2 (odds) or 8 (delta) in protobuf. Both are a market's update, counted alike.
 */
function classify(byte: number): Kind {
  if (binary ? byte === 0x12 || byte === 0x42 : byte === 0x6f || byte === 0x64) return Kind.Odds;
  if (binary ? byte === 0x0a : byte === 0x61) return Kind.Ack;
  return Kind.Other;
}
const CLASSIFY_AT = () => (binary ? 0 : 7);

const QUOTE = 0x22;
const MID_AT = '{"op":"odds","mid":"'.length;
/** A delta frame's `mid` starts one byte later: `{"op":"delta","mid":"`. */
const DELTA = 0x64;
const SEQ_KEY = Buffer.from('"seq":');

/** Reads `mid` and `seq` from the head of a JSON odds or delta frame (keys in protocol order) into the socket's last seqs. */
function track(s: State, len: number): void {
  const h = s.head!;
  const midAt = h[CLASSIFY_AT()] === DELTA ? MID_AT + 1 : MID_AT;
  const midEnd = h.indexOf(QUOTE, midAt);
  const at = h.indexOf(SEQ_KEY, midEnd);
  if (midEnd < 0 || midEnd >= len || at < 0 || at >= len) return;
  let seq = 0;
  for (let i = at + SEQ_KEY.length; i < len && h[i] >= 0x30 && h[i] <= 0x39; i++) seq = seq * 10 + h[i] - 0x30;
  s.last.set(h.toString('latin1', midAt, midEnd), seq);
}

function frames(s: State, buf: Buffer, start: number, end: number): void {
  const at = CLASSIFY_AT();
  let i = start;
  while (i < end) {
    if (s.left > 0) {
      const take = Math.min(s.left, end - i);
      if (s.opcode === 1 || s.opcode === 2) {
        if (s.compressed) s.compressed.push(Buffer.from(buf.subarray(i, i + take)));
        else if (s.deflated) s.kind = Kind.Odds;
        else if (at >= s.pos && at < s.pos + take) s.kind = classify(buf[i + at - s.pos]);
        if (s.tracked && s.pos < HEAD) buf.copy(s.head!, s.pos, i, i + Math.min(take, HEAD - s.pos));
      } else if (s.ctrl) {
        for (let k = 0; k < take; k++) s.ctrl.push(buf[i + k]);
      }
      s.pos += take;
      s.left -= take;
      i += take;
      if (s.left === 0) endFrame(s);
      continue;
    }
    s.hdr[s.hdrLen++] = buf[i++];
    if (s.hdrLen < 2) continue;
    const len7 = s.hdr[1] & 0x7f;
    const need = len7 === 126 ? 4 : len7 === 127 ? 10 : 2;
    if (s.hdrLen < need) continue;
    const len = len7 === 126 ? s.hdr.readUInt16BE(2) : len7 === 127 ? Number(s.hdr.readBigUInt64BE(2)) : len7;
    s.opcode = s.hdr[0] & 0x0f;
    s.deflated = (s.hdr[0] & 0x40) !== 0;
    s.hdrLen = 0;
    s.pos = 0;
    s.left = len;
    s.ctrl = s.opcode >= 8 ? [] : undefined;
    s.kind = Kind.None;
    s.compressed = s.deflated && s.pendingAcks > 0 ? [] : undefined;
    s.tracked = tracking && s.opcode === 1 && !s.deflated;
    if (s.tracked) s.head ??= Buffer.alloc(HEAD);
    if (len === 0) endFrame(s);
  }
}

/** permessage-deflate strips this tail from each message; inflating needs it back. */
const DEFLATE_TAIL = Buffer.from([0x00, 0x00, 0xff, 0xff]);

function endFrame(s: State): void {
  if (s.compressed) {
    const text = inflateRawSync(Buffer.concat([...s.compressed, DEFLATE_TAIL]), { finishFlush: constants.Z_SYNC_FLUSH });
    s.kind = text.length > CLASSIFY_AT() ? classify(text[CLASSIFY_AT()]) : Kind.Other;
    s.compressed = undefined;
  }
  if (s.kind === Kind.Ack) s.pendingAcks = Math.max(0, s.pendingAcks - 1);
  if (s.kind === Kind.Odds) {
    odds++;
    s.odds++;
    if (s.tracked) track(s, Math.min(s.pos, HEAD));
  } else if (s.kind === Kind.Ack) acks++;
  else if (s.opcode === 1 || s.opcode === 2) other++;
  s.kind = Kind.None;
  if (s.opcode === 9) s.sock.write(clientFrame(0xa, Buffer.from(s.ctrl ?? [])));
  else if (s.opcode === 8 && !s.closed) {
    s.closed = true;
    closed++;
  }
  s.ctrl = undefined;
}

function onRead(s: State, n: number, buf: Buffer, ready: () => void): boolean {
  reads++;
  if (s.handshake !== undefined) {
    s.handshake += buf.toString('latin1', 0, n);
    const end = s.handshake.indexOf('\r\n\r\n');
    if (end < 0) return true;
    const head = s.handshake.slice(0, end);
    const rest = Buffer.from(s.handshake.slice(end + 4), 'latin1');
    s.handshake = undefined;
    if (!/^HTTP\/1\.1 101/.test(head)) {
      s.closed = true;
      s.sock.destroy();
      // A refusal that says when to come back (the admission limits) is retried then, like a real client.
      const after = /\r\nretry-after: *(\d+)/i.exec(head);
      const line = head.split('\r\n')[0];
      if (after && s.retry) {
        refused.set(line, (refused.get(line) ?? 0) + 1);
        s.retry(Number(after[1]) * 1000 + Math.random() * 1000);
      } else process.stderr.write(`raw client: handshake refused: ${head.split('\r\n')[0]}\n`);
      return false;
    }
    if (/\r\nsec-websocket-extensions: *permessage-deflate/i.test(head)) deflating++;
    ready();
    bytes += rest.length;
    if (rest.length) frames(s, rest, 0, rest.length);
    return true;
  }
  bytes += n;
  frames(s, buf, 0, n);
  if (cycleMs > 0 && !s.paused) {
    s.paused = true;
    paused.push(s);
    return false;
  }
  return true;
}

function setCycle(ms: number): void {
  cycleMs = ms;
  clearInterval(cycleTimer);
  if (ms > 0) {
    cycleTimer = setInterval(() => {
      const list = paused;
      paused = [];
      for (const s of list) {
        s.paused = false;
        if (!s.closed) s.sock.resume();
      }
    }, ms);
  } else {
    for (const s of paused.splice(0)) {
      s.paused = false;
      s.sock.resume();
    }
  }
}

let nextId = 1;

/** A socket's subscribe requests as client frames, in one buffer. */
function subscribeFrames(requests: Subscribe[]): Buffer {
  return Buffer.concat(requests.map((r) => clientFrame(1, Buffer.from(JSON.stringify({ op: 'subscribe', id: nextId++, ...r })))));
}


async function connectAll(c: Connect): Promise<{ ok: number; failed: number }> {
  binary = c.protocol === 'odds.v1.proto';
  let ok = 0;
  let failed = 0;
  const one = (i: number) => new Promise<void>((done) => {
    const key = randomBytes(16).toString('base64');
    const subscribe = subscribeFrames(c.sockets[i]);
    let settled = false;
    const finish = (good: boolean) => {
      if (settled) return;
      settled = true;
      if (good) ok++;
      else failed++;
      done();
    };
    const state: State = {
      sock: undefined as unknown as net.Socket, handshake: '', hdr: Buffer.alloc(14), hdrLen: 0, left: 0, pos: 0, opcode: 0, deflated: false,
      pendingAcks: c.sockets[i].length, compressed: undefined, kind: Kind.None, odds: 0, mids: [...new Set(c.sockets[i].flatMap((r) => r.mids))],
      last: new Map(Object.entries(c.held?.[i] ?? {})), tracked: false, head: undefined,
      ctrl: undefined, paused: false, closed: false,
      retry: (ms) => {
        settled = true;
        setTimeout(() => void one(i).then(done), ms);
      },
    };
    const sock = net.connect({
      host: c.host, port: c.port, localAddress: c.localAddresses[i % c.localAddresses.length], noDelay: true,
      onread: {
        buffer: shared,
        // Connected once subscribed; the orchestrator then waits until every ack has arrived.
        callback: (n: number, buf: Uint8Array) => onRead(state, n, buf as Buffer, () => {
          requestsOf.set(state, c.sockets[i].map(({ since: _, ...q }) => q));
          sock.write(subscribe);
          finish(true);
        }),
      },
    } as net.NetConnectOpts);
    state.sock = sock;
    sock.on('connect', () => sock.write(
      `GET ${c.path} HTTP/1.1\r\nHost: ${c.host}:${c.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ${c.protocol}\r\n` +
      (c.extensions ? `Sec-WebSocket-Extensions: ${c.extensions}\r\n` : '') + '\r\n',
    ));
    sock.on('error', (err) => {
      if (!settled) process.stderr.write(`raw client: ${err.message}\n`);
      finish(false);
    });
    sock.on('close', () => {
      if (!state.closed) {
        state.closed = true;
        closed++;
      }
      finish(false);
    });
    setTimeout(() => finish(false), 30_000).unref();
    sockets.push(state);
  });
  // A storm's reconnects spread over `spreadMs`, each at a random moment, as clients' own jitter spreads them.
  if (c.spreadMs) await Promise.all([...c.sockets.keys()].map((i) => new Promise<void>((r) => setTimeout(r, Math.random() * c.spreadMs!)).then(() => one(i))));
  else await eachLimit(c.sockets.keys(), c.concurrency, one);
  return { ok, failed };
}

/** The requests each live socket was opened with, kept so a resume can send them again. */
const requestsOf = new WeakMap<State, Subscribe[]>();

function resume(r: Resume): Promise<{ ok: number; failed: number }> {
  // Every socket that was accepted, whether still open or closed by the server (a restart says 1001).
  const live = sockets.filter((s) => requestsOf.has(s));
  for (const s of live) {
    s.closed = true;
    s.sock.destroy();
  }
  sockets.length = 0;
  const since = (s: State) => ({ epoch: r.epoch, seqs: Object.fromEntries(s.last) });
  return connectAll({
    type: 'connect', host: r.host, port: r.port, path: '/ws', protocol: binary ? 'odds.v1.proto' : 'odds.v1.json',
    sockets: live.map((s) => (requestsOf.get(s) ?? []).map((q) => ({ ...q, since: since(s) }))),
    held: live.map((s) => Object.fromEntries(s.last)), localAddresses: r.localAddresses, concurrency: r.concurrency, spreadMs: r.spreadMs,
  });
}

process.on('message', (m: Command) => {
  switch (m.type) {
    case 'resume':
      resume(m).then((r) => process.send!({ type: 'resumed', ...r }));
      break;
    case 'connect':
      connectAll(m).then((r) => process.send!({ type: 'connected', ...r, deflating }));
      break;
    case 'counts':
      process.send!({ type: 'counts', odds, acks, other, closed, reads, bytes, cpu: process.cpuUsage(), refused: Object.fromEntries(refused) });
      break;
    case 'cycle':
      setCycle(m.ms);
      process.send!({ type: 'cycled' });
      break;
    case 'subscribe':
      // Requests for markets a socket already takes replace their depth and conflation.
      for (const [i, s] of sockets.entries()) {
        if (s.closed || !m.sockets[i]) continue;
        s.pendingAcks += m.sockets[i].length;
        s.sock.write(subscribeFrames(m.sockets[i]));
      }
      process.send!({ type: 'subscribed' });
      break;
    case 'track':
      tracking = m.on;
      process.send!({ type: 'tracking' });
      break;
    case 'newest':
      process.send!({ type: 'newest', ...newest(sockets, m.expected) });
      break;
    case 'detail':
      process.send!({ type: 'detail', sockets: sockets.map((s) => ({ port: s.sock.localPort, odds: s.odds, last: Object.fromEntries(s.last) })) });
      break;
    case 'close':
      setCycle(0);
      for (const s of sockets) s.sock.destroy();
      process.send!({ type: 'closed' }, () => process.exit(0));
      break;
  }
});
process.on('disconnect', () => process.exit(0));
