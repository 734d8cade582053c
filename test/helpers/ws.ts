import WebSocket from 'ws';
import { decodeServerJson, decodeServerProto } from '../../src/odds/codec.js';
import { encodeClientProto } from '../../src/odds/client-codec.js';
import { encodeIngestProto } from '../../src/odds/ingest-codec.js';
import { isLineType, type MarketType } from '../../src/refdata/types.js';
import type { AckMessage, ClientMessage, ServerMessage } from '../../src/odds/messages.js';

export type Format = 'json' | 'proto';

/**
 * A subscriber over a real socket, keeping every frame it received in order so
 * tests can assert on sequences. `next` waits for a matching frame after a
 * cursor; nothing here peeks at the server's internals.
 */
export class Client {
  readonly frames: ServerMessage[] = [];
  private waiters: (() => void)[] = [];
  private nextId = 1;
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(readonly ws: WebSocket, readonly format: Format) {
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      this.frames.push(isBinary ? decodeServerProto(new Uint8Array(data)) : decodeServerJson(data.toString('utf8')));
      for (const w of this.waiters.splice(0)) w();
    });
    this.closed = new Promise((ok) => ws.on('close', (code, reason) => {
      ok({ code, reason: reason.toString() });
      for (const w of this.waiters.splice(0)) w();
    }));
  }

  /** `headers` (a Host of another name, X-Forwarded-For) and `localAddress` (another loopback source) as a test needs them. */
  static connect(base: string, opts: { format?: Format; query?: string; protocols?: string[]; headers?: Record<string, string>; localAddress?: string } = {}): Promise<Client> {
    const url = base.replace(/^http/, 'ws') + '/ws' + (opts.query ? `?${opts.query}` : '');
    const protocols = opts.protocols ?? (opts.format ? [`odds.v1.${opts.format}`] : []);
    const ws = new WebSocket(url, protocols, { headers: opts.headers, localAddress: opts.localAddress });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new Client(ws, ws.protocol === 'odds.v1.proto' ? 'proto' : 'json')));
      ws.once('error', reject);
      ws.once('unexpected-response', (req, res) => {
        // Dropped at once, so a refused handshake never holds the test process open.
        req.destroy();
        reject(new Error(`upgrade refused: ${res.statusCode}`));
      });
    });
  }

  send(msg: Omit<ClientMessage, 'id'> & { id?: number }): number {
    const id = msg.id ?? this.nextId++;
    const full = { ...msg, id } as ClientMessage;
    this.ws.send(this.format === 'proto' ? encodeClientProto(full) : JSON.stringify(full));
    return id;
  }

  sendRaw(data: string | Buffer): void {
    this.ws.send(data);
  }

  /** Sends a request and resolves with its ack. */
  async request(msg: Omit<ClientMessage, 'id'>): Promise<AckMessage> {
    const id = this.send(msg);
    return (await this.next((f) => f.op === 'ack' && f.id === id)) as AckMessage;
  }

  /**
   * The first frame at or after `from` that matches, waiting up to `ms`: a bound that fails, never
   * a pace, so it leaves room for a machine running seven other files (5 s once ran out there).
   */
  async next(match: (f: ServerMessage) => boolean, ms = 15_000, from = 0): Promise<ServerMessage> {
    const end = Date.now() + ms;
    for (let i = from; ; ) {
      for (; i < this.frames.length; i++) if (match(this.frames[i])) return this.frames[i];
      const left = end - Date.now();
      if (left <= 0 || this.ws.readyState === WebSocket.CLOSED) throw new Error(`no matching frame within ${ms} ms; last: ${JSON.stringify(this.frames.at(-1))?.slice(0, 300)}`);
      await new Promise<void>((ok) => {
        const timer = setTimeout(ok, left);
        this.waiters.push(() => { clearTimeout(timer); ok(); });
      });
    }
  }

  /**
   * Frames of one market received so far. A ping's ack proves the server has
   * sent everything it was going to send before it: frames on one socket are
   * ordered.
   */
  async settled(): Promise<void> {
    await this.request({ op: 'ping' });
  }

  oddsOf(mid: string): Extract<ServerMessage, { op: 'odds' }>[] {
    return this.frames.filter((f): f is Extract<ServerMessage, { op: 'odds' }> => f.op === 'odds' && f.mid === mid);
  }

  close(): void {
    this.ws.close();
  }
}

/** Sends one batch on a fresh `/ingest` socket in `format` (text JSON or a binary IngestBatch) and resolves with its ack. */
export function ingestOnSocket(base: string, format: Format, data: Record<string, unknown>[]): Promise<AckMessage> {
  const ws = new WebSocket(base.replace(/^http/, 'ws') + '/ingest', [`odds.v1.${format}`]);
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    ws.once('open', () => ws.send(format === 'proto' ? encodeIngestProto(data) : JSON.stringify({ id: 1, data })));
    ws.once('message', (frame: Buffer, isBinary: boolean) => {
      ws.close();
      const msg = isBinary ? decodeServerProto(new Uint8Array(frame)) : decodeServerJson(frame.toString('utf8'));
      if (msg.op === 'ack') resolve(msg);
      else reject(new Error(`expected an ack, got ${msg.op}`));
    });
  });
}

/** A runner-market image as a publisher sends it. */
export function image(mid: string, price = 2, runners = [1, 2]): Record<string, unknown> {
  return {
    kind: 'odds', mid, ts: Date.now(), st: 'OPEN', ip: true,
    r: runners.map((rid, i) => ({ rid, st: 'ACTIVE', b: [[price + i, 10], [price + i - 0.01, 20], [price + i - 0.02, 30]], l: [[price + i + 0.02, 11], [price + i + 0.04, 21], [price + i + 0.06, 31]] })),
  };
}

/** The image with what last traded and how much: each runner at its best back, and the market's total. */
export function withTraded(item: Record<string, unknown>): Record<string, unknown> {
  const r = (item.r as { b: number[][] }[]).map((x, i) => ({ ...x, ltp: x.b[0][0], tv: 1000 * (i + 1) }));
  return { ...item, r, tv: r.reduce((sum, x) => sum + x.tv, 0) };
}

/** A line-market image as a publisher sends it: Yes a run above No at even rates, three levels a side. */
export function lineImage(mid: string, line = 40): Record<string, unknown> {
  return {
    kind: 'odds', mid, ts: Date.now(), st: 'OPEN', ip: true,
    r: [{ rid: 1, st: 'ACTIVE', b: [[line + 1, 100], [line + 2, 100], [line + 3, 100]], l: [[line, 100], [line - 1, 100], [line - 2, 100]] }],
  };
}

/** An image a market of type `ty` can have (null: one nested in a player-race): a line for line markets, else runners' ladders. */
export const imageFor = (ty: MarketType | null, mid: string, price = 2): Record<string, unknown> =>
  isLineType(ty) ? lineImage(mid, price) : image(mid, price);
