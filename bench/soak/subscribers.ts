/**
 * The soak's subscriber sockets: a pool of JSON and protobuf sockets with churn, each checking
 * the order of what it is sent.
 */
import WebSocket from 'ws';
import { decodeServerJson, decodeServerProto } from '../../src/odds/codec.js';
import { encodeClientProto } from '../../src/odds/client-codec.js';
import type { AckMessage, ClientMessage, OddsMessage, ServerMessage } from '../../src/odds/messages.js';
import { Problems, pickOne, pickSome } from './util.js';

// ---- subscriber sockets ----

export type Format = 'json' | 'proto';

/** Frame statistics of the pool, and order checks on the protobuf sockets (which decode every frame). */
export interface FrameStats {
  frames: number;
  /** Odds frames missing between two a proto socket got for one market (no `con` on the later one). */
  seqGaps: number;
  /** An odds frame older than the previous one of its market. */
  seqBack: number;
  /** The same image twice (a subscribe to a market already held sends its image again). */
  dupImages: number;
  conflated: number;
}

class Sub {
  /** Markets this socket subscribed itself, as acked by the server. */
  readonly mids = new Set<string>();
  /** The one unlisted market ID it holds, if any (a fresh one each time: new uWS topics). */
  unlisted: string | undefined;
  /** Closed by the load generator (or by the server's shutdown, when that is expected). */
  leaving = false;
  closeCode: number | undefined;
  readonly closed: Promise<number>;
  private nextId = 1;
  private readonly pending = new Map<number, { ok: (a: AckMessage) => void; fail: (e: Error) => void; timer: NodeJS.Timeout }>();
  private readonly seqs = new Map<string, number>();

  constructor(readonly ws: WebSocket, readonly format: Format, private readonly pool: Pool) {
    ws.binaryType = 'nodebuffer';
    ws.on('message', (data: Buffer, isBinary: boolean) => this.onMessage(data, isBinary));
    ws.on('error', (err) => {
      if (!this.leaving) pool.problems.note('subscriber socket', err.message);
    });
    this.closed = new Promise((ok) => ws.once('close', (code) => {
      this.closeCode = code;
      for (const p of this.pending.values()) p.fail(new Error(`socket closed (${code})`));
      this.pending.clear();
      pool.gone(this, code);
      ok(code);
    }));
  }

  request(op: 'subscribe' | 'unsubscribe' | 'ping', mids?: string[]): Promise<AckMessage> {
    const id = this.nextId++;
    const msg: ClientMessage = mids ? { op, id, mids } : { op, id };
    return new Promise((ok, fail) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        fail(new Error(`no ack for ${op} within 10 s`));
      }, 10_000);
      this.pending.set(id, { ok, fail, timer });
      this.ws.send(this.format === 'proto' ? encodeClientProto(msg) : JSON.stringify(msg));
    });
  }

  /** Subscribes or unsubscribes and keeps `mids` equal to what the server acked. */
  async change(op: 'subscribe' | 'unsubscribe', mids: string[]): Promise<boolean> {
    try {
      const ack = await this.request(op, mids);
      if (ack.status !== 1) {
        this.pool.problems.note('subscriber ack', `${op} ${mids.join(',')} refused: ${ack.message}`);
        return false;
      }
      for (const mid of mids) {
        if (op === 'subscribe') this.mids.add(mid);
        else {
          this.mids.delete(mid);
          this.seqs.delete(mid);
        }
      }
      return true;
    } catch (err) {
      if (!this.leaving) this.pool.problems.note('subscriber ack', `${op}: ${(err as Error).message}`);
      return false;
    }
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    const stats = this.pool.stats;
    stats.frames++;
    // JSON odds frames are counted, not parsed: `{"op":"odds"` is their fixed start.
    if (!isBinary && data.length > 12 && data[7] === 0x6f && data[8] === 0x64 && data[9] === 0x64 && data[10] === 0x73) return;
    let m: ServerMessage;
    try {
      m = isBinary ? decodeServerProto(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)) : decodeServerJson(data.toString('utf8'));
    } catch (err) {
      this.pool.problems.note('subscriber frame', `undecodable ${isBinary ? 'binary' : 'text'} frame: ${(err as Error).message}`);
      return;
    }
    switch (m.op) {
      case 'ack': {
        const p = this.pending.get(m.id);
        if (!p) return this.pool.problems.note('subscriber ack', `unexpected ack ${JSON.stringify(m).slice(0, 200)}`);
        this.pending.delete(m.id);
        clearTimeout(p.timer);
        return p.ok(m);
      }
      case 'odds':
        return this.order(m);
      case 'unsubscribed':
        for (const mid of m.mids) {
          this.seqs.delete(mid);
          // Only REST unsubscribe detaches here: of the reserved markets, never of the socket's own.
          if (this.mids.delete(mid)) this.pool.problems.note('subscriber frame', `the server detached ${mid}, which this socket subscribed itself`);
        }
        return;
      default:
        return;
    }
  }

  private order(m: OddsMessage): void {
    const stats = this.pool.stats;
    const last = this.seqs.get(m.mid);
    if (m.con) stats.conflated++;
    else if (last !== undefined) {
      if (m.seq > last + 1) stats.seqGaps += m.seq - last - 1;
      else if (m.seq < last) stats.seqBack++;
      else if (m.seq === last) stats.dupImages++;
    }
    if (last === undefined || m.seq > last) this.seqs.set(m.mid, m.seq);
  }
}

/**
 * The fan-out pool: sockets subscribed to several markets each, a quarter of them protobuf.
 * Its counts (`held`, `expectedSubscriptions`) are what the server's gauges must show whenever
 * no change is in flight.
 */
export class Pool {
  readonly subs = new Set<Sub>();
  readonly stats: FrameStats = { frames: 0, seqGaps: 0, seqBack: 0, dupImages: 0, conflated: 0 };
  opened = 0;
  closedByUs = 0;
  terminatedByUs = 0;
  moves = 0;
  unlistedIds = 0;
  /** Set before the service's shutdown, whose 1001 closes are expected. */
  expectServerClose = false;
  readonly serverCloses = new Map<number, number>();

  constructor(
    private readonly wsUrl: string,
    private readonly choices: readonly string[],
    private readonly perSocket: number,
    readonly problems: Problems,
  ) {}

  held(): { json: number; proto: number; total: number } {
    let json = 0;
    let proto = 0;
    for (const s of this.subs) {
      if (s.format === 'json') json++;
      else proto++;
    }
    return { json, proto, total: json + proto };
  }

  expectedSubscriptions(): number {
    let n = 0;
    for (const s of this.subs) n += s.mids.size;
    return n;
  }

  /** Called by a socket once it closed, whoever closed it. */
  gone(sub: Sub, code: number): void {
    this.subs.delete(sub);
    if (sub.leaving) return;
    this.serverCloses.set(code, (this.serverCloses.get(code) ?? 0) + 1);
    if (!this.expectServerClose) this.problems.note('subscriber socket', `closed by the server with ${code}`);
  }

  /** Opens `n` sockets, 50 at a time, each subscribing to `perSocket` markets. */
  async open(n: number): Promise<void> {
    for (let done = 0; done < n; done += 50) {
      await Promise.all(Array.from({ length: Math.min(50, n - done) }, () => this.openOne()));
    }
  }

  private async openOne(): Promise<void> {
    const format: Format = Math.random() < 0.25 ? 'proto' : 'json';
    const ws = new WebSocket(this.wsUrl, [`odds.v1.${format}`], { perMessageDeflate: false });
    try {
      await new Promise<void>((ok, fail) => {
        const timer = setTimeout(() => fail(new Error('no open within 10 s')), 10_000);
        ws.once('open', () => {
          clearTimeout(timer);
          ok();
        });
        ws.once('error', (err) => {
          clearTimeout(timer);
          fail(err);
        });
        ws.once('unexpected-response', (_req, res) => {
          clearTimeout(timer);
          fail(new Error(`upgrade refused: ${res.statusCode}`));
        });
      });
    } catch (err) {
      this.problems.note('subscriber open', (err as Error).message);
      ws.terminate();
      return;
    }
    const sub = new Sub(ws, format, this);
    this.subs.add(sub);
    this.opened++;
    await sub.change('subscribe', pickSome(this.choices, this.perSocket));
  }

  /** Closes `n` sockets: two in three with a close handshake, one in three by dropping the connection. */
  async close(n: number): Promise<void> {
    const victims = pickSome([...this.subs], n);
    await Promise.all(victims.map(async (s, i) => {
      s.leaving = true;
      if (i % 3 === 2) {
        s.ws.terminate();
        this.terminatedByUs++;
      } else {
        s.ws.close(1000, 'soak churn');
        this.closedByUs++;
      }
      const timer = setTimeout(() => s.ws.terminate(), 5000);
      await s.closed;
      clearTimeout(timer);
    }));
  }

  /** Moves `n` sockets: one market swapped for another, or the unlisted market ID replaced by a fresh one. */
  async move(n: number): Promise<void> {
    await Promise.all(pickSome([...this.subs], n).map(async (s) => {
      this.moves++;
      if (Math.random() < 0.7) {
        const listed = [...s.mids].filter((m) => m !== s.unlisted);
        const old = listed.length ? pickOne(listed) : undefined;
        const free = this.choices.filter((m) => !s.mids.has(m));
        if (old) await s.change('unsubscribe', [old]);
        if (free.length) await s.change('subscribe', [pickOne(free)]);
      } else {
        if (s.unlisted && (await s.change('unsubscribe', [s.unlisted]))) s.unlisted = undefined;
        const fresh = `soak.u.${++this.unlistedIds}`;
        if (await s.change('subscribe', [fresh])) s.unlisted = fresh;
      }
    }));
  }

  /** Drops every socket without waiting for anything (after a failure). */
  terminateAll(): void {
    for (const s of this.subs) {
      s.leaving = true;
      s.ws.terminate();
    }
  }

  toJSON(): Record<string, unknown> {
    return {
      held: this.held(), opened: this.opened, closedByUs: this.closedByUs, terminatedByUs: this.terminatedByUs, moves: this.moves,
      unlistedIds: this.unlistedIds, serverCloses: Object.fromEntries(this.serverCloses), frames: this.stats,
    };
  }
}
