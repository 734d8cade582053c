/**
 * Subscribers reading as a screen reads, at full speed or at a pace of their own as on a slow
 * link: a raw WebSocket client over TCP (just what a subscriber needs: the handshake, text
 * frames, pongs to pings) and the TypeScript client behind a relay. `bench:age` (age/reader.ts)
 * and hub/age.test.ts's slow reader share them, so the test checks what the benchmark measures.
 *
 * A paced reader reads `rate` bytes a second, every 100 ms what its link carried since the last
 * time, and answers a ping only once it has read everything before it, as a client on a link of
 * that speed does (RFC 6455 asks a pong of it when it reads the ping): the server's probes see
 * the link.
 */
import { connect, createServer, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { OddsClient, type MarketFreshness } from '../../src/client/index.js';
import type { OddsMessage } from '../../src/odds/messages.js';

/** Bytes a second a reader takes from its link now; 0 for all it can. Read at every tick, so a reader can speed up. */
export type Rate = () => number;

/** What a screen reads of a frame: an odds frame's numbering and stamps, a freshness frame's word, an ack's status. */
export interface Read {
  op: string;
  mid?: string;
  seq?: number;
  /** An odds frame's publish time at the server, ms. */
  pt?: number;
  /** An odds frame's source time, ms. */
  ts?: number;
  live?: boolean;
  why?: string;
  at?: number;
  status?: number;
}

/**
 * Bytes from `from` handed to `to` at `rate` a second, as a link of that speed lets them through:
 * every 100 ms what the link carried since the last time (a tick that comes late hands on more,
 * as a reader that got the CPU late finds more in its buffer); at once while the rate is 0 and
 * nothing is held. It takes from the socket while it holds less than a second's bytes, as the
 * link's far end buffers them (a paused socket hands on what it had buffered one chunk at a
 * time, often a frame, so pausing at every chunk would read a frame per tick whatever the rate).
 */
export class Pace {
  private held: Buffer[] = [];
  private bytes = 0;
  private last = performance.now();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly from: Socket, private readonly to: (b: Buffer) => void, private readonly rate: Rate) {
    from.on('data', (b: Buffer) => {
      if (this.rate() <= 0 && !this.held.length) return to(b);
      this.held.push(b);
      this.bytes += b.length;
      if (this.bytes >= this.rate()) from.pause();
    });
    this.timer = setInterval(() => this.tick(), 100);
    from.once('close', () => clearInterval(this.timer));
  }

  private tick(): void {
    const now = performance.now();
    // What the link carried since the last tick, up to a second's worth.
    const budget = this.rate() > 0 ? Math.round(this.rate() * Math.min(1, (now - this.last) / 1000)) : Infinity;
    this.last = now;
    this.let(budget);
  }

  private let(budget: number): void {
    while (budget > 0 && this.held.length) {
      const head = this.held[0];
      const part = head.subarray(0, Math.min(head.length, budget));
      budget -= part.length;
      this.bytes -= part.length;
      if (part.length === head.length) this.held.shift();
      else this.held[0] = head.subarray(part.length);
      this.to(part);
    }
    if (this.rate() <= 0 || this.bytes < this.rate()) this.from.resume();
  }
}

const ODDS = Buffer.from('{"op":"odds"');

/** A number written after `key` in a JSON frame, read without parsing the frame. */
function numberAfter(frame: Buffer, key: string): number {
  const at = frame.indexOf(key);
  if (at < 0) return NaN;
  const from = at + key.length;
  let to = from;
  while (to < frame.length && frame[to] !== 0x2c && frame[to] !== 0x7d) to++;
  return Number(frame.toString('latin1', from, to));
}

/** What a text frame says: an odds frame's head read in place (they are most of what comes, and large), anything else parsed. */
export function readText(payload: Buffer): Read {
  if (payload.subarray(0, ODDS.length).equals(ODDS)) {
    const m = payload.indexOf('"mid":"') + 7;
    const mid = payload.toString('utf8', m, payload.indexOf('"', m));
    return { op: 'odds', mid, seq: numberAfter(payload, '"seq":'), ts: numberAfter(payload, '"ts":'), pt: numberAfter(payload, '"pt":') };
  }
  return JSON.parse(payload.toString('utf8')) as Read;
}

export interface RawOptions {
  port: number;
  host?: string;
  /** The markets it subscribes to, in one request (id 1), once the handshake is answered. */
  mids: string[];
  /** Its pace; at full speed without one. */
  rate?: Rate;
  /** Each text frame, as it is read. */
  read: (msg: Read) => void;
  /** The server closed it, or the connection failed. */
  closed?: (why: string) => void;
}

/** A client frame: masked (with a zero mask, which leaves the payload as it is). */
function clientFrame(opcode: number, payload: Buffer): Buffer {
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x80 | opcode, 0x80 | n]) : Buffer.from([0x80 | opcode, 0x80 | 126, n >> 8, n & 0xff]);
  return Buffer.concat([head, Buffer.alloc(4), payload]);
}

/** The length of the frame at the start of `buf` and where its payload starts; undefined until its header is whole. */
function header(buf: Buffer): { at: number; len: number } | undefined {
  if (buf.length < 2) return undefined;
  const len = buf[1] & 0x7f;
  if (len < 126) return { at: 2, len };
  if (len === 126) return buf.length < 4 ? undefined : { at: 4, len: buf.readUInt16BE(2) };
  return buf.length < 10 ? undefined : { at: 10, len: Number(buf.readBigUInt64BE(2)) };
}

/** A raw WebSocket subscriber (JSON): answers pings as it reads them, hands on every text frame. */
export function rawReader(o: RawOptions): Socket {
  const host = o.host ?? '127.0.0.1';
  const sock = connect(o.port, host);
  sock.setNoDelay(true);
  const key = randomBytes(16).toString('base64');
  sock.write(`GET /ws HTTP/1.1\r\nHost: ${host}:${o.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: odds.v1.json\r\n\r\n`);
  let buf: Buffer = Buffer.alloc(0);
  let open = false;
  const parse = () => {
    if (!open) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      if (!buf.subarray(0, end).toString('latin1').startsWith('HTTP/1.1 101')) return sock.destroy(new Error(`refused: ${buf.toString('latin1', 0, end)}`));
      open = true;
      buf = buf.subarray(end + 4);
      sock.write(clientFrame(1, Buffer.from(JSON.stringify({ op: 'subscribe', id: 1, mids: o.mids }))));
    }
    for (let h = header(buf); h && buf.length >= h.at + h.len; h = header(buf)) {
      const opcode = buf[0] & 0x0f;
      const payload = buf.subarray(h.at, h.at + h.len);
      buf = buf.subarray(h.at + h.len);
      if (opcode === 0x9) sock.write(clientFrame(0xa, Buffer.from(payload)));
      else if (opcode === 0x1) o.read(readText(payload));
      else if (opcode === 0x8) o.closed?.(`closed by the server: ${payload.length >= 2 ? payload.readUInt16BE(0) : ''} ${payload.toString('utf8', 2)}`);
    }
  };
  const take = (b: Buffer) => {
    buf = buf.length ? Buffer.concat([buf, b]) : b;
    parse();
  };
  if (o.rate) new Pace(sock, take, o.rate);
  else sock.on('data', take);
  sock.on('error', (err) => o.closed?.(err.message));
  return sock;
}

export interface ClientOptions {
  port: number;
  host?: string;
  mids: string[];
  /** The pace of its link: the relay passes the server's bytes on at it. */
  rate: Rate;
  /** The client's own bound (its maxAgeMs): the server's, for the client to judge by the same. */
  maxAgeMs: number;
  /** Each odds frame the client emits, with the market's freshness as the client holds it then. */
  odds: (msg: OddsMessage, freshness: MarketFreshness) => void;
  /** Each change of a market's freshness. */
  freshness: (f: MarketFreshness) => void;
  /** Its subscribe was answered. */
  subscribed?: () => void;
}

/**
 * The TypeScript client behind a relay of its own on this machine's loopback: the client's bytes
 * go straight through, the server's at the pace. Resolves with the client once it is connecting.
 */
export function pacedClient(o: ClientOptions): Promise<OddsClient> {
  const host = o.host ?? '127.0.0.1';
  const relay = createServer((inbound) => {
    const outbound = connect(o.port, host);
    outbound.setNoDelay(true);
    inbound.setNoDelay(true);
    inbound.pipe(outbound);
    new Pace(outbound, (b) => inbound.write(b), o.rate);
    for (const s of [inbound, outbound]) s.on('error', () => undefined);
  });
  return new Promise((ok) => relay.listen(0, '127.0.0.1', () => {
    const { port: via } = relay.address() as { port: number };
    const c = new OddsClient({ url: `ws://127.0.0.1:${via}/ws`, WebSocket: WebSocket as never, maxAgeMs: o.maxAgeMs });
    c.on('odds', (msg) => o.odds(msg, c.freshness(msg.mid)));
    c.on('freshness', o.freshness);
    c.on('open', () => void c.subscribe({ mids: o.mids }).then(() => o.subscribed?.()));
    c.connect();
    ok(c);
  }));
}
