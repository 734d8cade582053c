/**
 * The soak's load, all to 127.0.0.1 and all bounded in rate: REST reads over keep-alive
 * connections, odds images through the `/ingest` socket, market state toggles through
 * `POST /api/v1/ingest`, REST subscribe/unsubscribe, and a pool of subscriber sockets with churn.
 * Timers only, no busy loops: the service shares the machine.
 */
import http from 'node:http';
import WebSocket from 'ws';
import { decodeServerJson, decodeServerProto } from '../../src/odds/codec.js';
import { encodeClientProto } from '../../src/odds/client-codec.js';
import type { AckMessage, ClientMessage, OddsMessage, ServerMessage } from '../../src/odds/messages.js';
import type { Catalog, OpenMarket } from './catalog.js';
import { Problems, sleep } from './util.js';

const rnd = (n: number): number => Math.floor(Math.random() * n);
const pickOne = <T>(xs: readonly T[]): T => xs[rnd(xs.length)];
/** k distinct elements (all of them when k >= length). */
function pickSome<T>(xs: readonly T[], k: number): T[] {
  const copy = [...xs];
  const out: T[] = [];
  while (out.length < k && copy.length) out.push(copy.splice(rnd(copy.length), 1)[0]);
  return out;
}
const round2 = (x: number): number => Math.round(x * 100) / 100;

// ---- HTTP ----

export interface Answer {
  status: number;
  text: string;
}

/** Keep-alive HTTP to the service: at most `maxSockets` connections, reused. */
export class Http {
  private readonly agent: http.Agent;

  constructor(private readonly port: number, maxSockets = 8) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  }

  request(method: string, path: string, body?: string): Promise<Answer> {
    return new Promise((ok, fail) => {
      const headers: http.OutgoingHttpHeaders = body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
      const req = http.request({ host: '127.0.0.1', port: this.port, method, path, agent: this.agent, headers }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => ok({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') }));
        res.on('error', fail);
      });
      req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')));
      req.on('error', fail);
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

// ---- REST reads ----

interface Shot {
  route: string;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  expect: number;
}

/** Requests answered wrongly on purpose: the error paths run under load too. */
const BAD: Shot[] = [
  { route: 'bad: si not a number', method: 'GET', path: '/api/v1/sports/events?si=abc', expect: 400 },
  { route: 'bad: eid missing', method: 'GET', path: '/api/v1/events/markets', expect: 400 },
  { route: 'bad: unknown route', method: 'GET', path: '/api/v1/nothing-here', expect: 404 },
  { route: 'bad: wrong method', method: 'POST', path: '/api/v1/sports', body: '{}', expect: 405 },
  { route: 'bad: empty subscribe', method: 'POST', path: '/api/v1/subscribe', body: '{"data":[]}', expect: 400 },
  {
    route: 'bad: odds for unknown market', method: 'POST', path: '/api/v1/ingest',
    body: JSON.stringify({ data: [{ kind: 'odds', mid: 'soak.unknown', ts: 1, st: 'OPEN', ip: true, r: [] }] }), expect: 400,
  },
];

/** REST reads across every data route at a steady rate, plus a few refused requests. */
export class RestLoad {
  sent = 0;
  answered = 0;
  /** Client-observed 5xx answers. */
  fiveXX = 0;
  /** Requests not sent because too many were in flight (the service or this process fell behind). */
  shed = 0;
  readonly byRoute = new Map<string, Map<number, number>>();
  private inflight = 0;
  private budget = 0;
  private timer: NodeJS.Timeout | undefined;
  private last: number | undefined;
  private n = 0;

  constructor(private readonly http: Http, private readonly cat: Catalog, private readonly rps: number, private readonly problems: Problems) {}

  start(): void {
    this.timer = setInterval(() => this.tick(), 50);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    for (let t = 0; this.inflight > 0 && t < 10_000; t += 20) await sleep(20);
  }

  private tick(): void {
    // Timers run late on a busy machine: the budget follows the clock (at most 1 s of it at once).
    const now = performance.now();
    this.budget += (this.rps * Math.min(1000, now - (this.last ?? now - 50))) / 1000;
    this.last = now;
    while (this.budget >= 1) {
      this.budget -= 1;
      if (this.inflight >= 128) this.shed++;
      else this.fire(this.pick());
    }
  }

  private pick(): Shot {
    const r = Math.random();
    const { sis, lis, eids, mids } = this.cat;
    const get = (route: string, path: string): Shot => ({ route, method: 'GET', path, expect: 200 });
    if (r < 0.12) return get('sports', '/api/v1/sports');
    if (r < 0.32) {
      const li = Math.random() < 0.3 ? '&li=' + pickSome(lis, 1 + rnd(3)).join(',') : '';
      return get('events', `/api/v1/sports/events?si=${pickSome(sis, 1 + rnd(5)).join(',')}${li}`);
    }
    if (r < 0.57) {
      const ids = pickSome(eids, 1 + rnd(10)).map(String);
      if (Math.random() < 0.1) ids.push('99999999');
      return get('markets', `/api/v1/events/markets?eid=${ids.join(',')}`);
    }
    if (r < 0.85) {
      const ids = pickSome(mids, 1 + rnd(49));
      if (Math.random() < 0.1) ids.push('soak.none');
      return get('results', `/api/v1/markets/result?mid=${ids.join(',')}`);
    }
    if (r < 0.91) return get('health', '/health');
    if (r < 0.97) return get('ready', '/ready');
    return pickOne(BAD);
  }

  private fire(s: Shot): void {
    this.inflight++;
    this.sent++;
    const check = ++this.n % 25 === 0;
    this.http.request(s.method, s.path, s.body).then(
      (a) => {
        this.answered++;
        const statuses = this.byRoute.get(s.route) ?? new Map<number, number>();
        this.byRoute.set(s.route, statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1));
        if (a.status >= 500) this.fiveXX++;
        if (a.status !== s.expect) this.problems.note('REST answer', `${s.method} ${s.path.slice(0, 120)} answered ${a.status}, expected ${s.expect}: ${a.text.slice(0, 200)}`);
        else if (check) {
          try {
            JSON.parse(a.text);
          } catch {
            this.problems.note('REST body', `${s.method} ${s.path.slice(0, 120)}: not JSON: ${a.text.slice(0, 200)}`);
          }
        }
      },
      (err: Error) => this.problems.note('REST transport', `${s.method} ${s.path.slice(0, 120)}: ${err.message}`),
    ).finally(() => this.inflight--);
  }

  toJSON(): Record<string, unknown> {
    const routes: Record<string, Record<string, number>> = {};
    for (const [route, statuses] of this.byRoute) routes[route] = Object.fromEntries(statuses);
    return { sent: this.sent, answered: this.answered, fiveXX: this.fiveXX, shed: this.shed, routes };
  }
}

// ---- odds images through /ingest ----

/** A JSON publisher socket on `/ingest`: `perSecond` images in 10 batches a second, each acked. */
export class IngestFeed {
  imagesAcked = 0;
  batchesAcked = 0;
  /** Ticks whose batch was not sent because 20 were still unacked. */
  skipped = 0;
  reconnects = 0;
  private ws: WebSocket | undefined;
  private nextId = 1;
  private inflight = new Map<number, number>();
  private closing = false;
  private budget = 0;
  private last: number | undefined;
  private timers: NodeJS.Timeout[] = [];
  private readonly prices = new Map<string, number>();

  constructor(
    private readonly base: string,
    private readonly markets: readonly OpenMarket[],
    private readonly perSecond: number,
    private readonly problems: Problems,
  ) {}

  async connect(): Promise<void> {
    const ws = new WebSocket(this.base.replace(/^http/, 'ws') + '/ingest', ['odds.v1.json'], { perMessageDeflate: false });
    await new Promise<void>((ok, fail) => {
      ws.once('open', () => ok());
      ws.once('error', fail);
      ws.once('unexpected-response', (_req, res) => fail(new Error(`/ingest upgrade refused: ${res.statusCode}`)));
    });
    ws.on('error', (err) => this.problems.note('ingest socket', err.message));
    ws.on('message', (data: Buffer) => {
      let ack: AckMessage;
      try {
        ack = JSON.parse(data.toString('utf8')) as AckMessage;
      } catch {
        this.problems.note('ingest ack', `not JSON: ${data.toString('utf8').slice(0, 200)}`);
        return;
      }
      const count = this.inflight.get(ack.id);
      this.inflight.delete(ack.id);
      if (ack.op !== 'ack' || ack.status !== 1 || count === undefined) {
        this.problems.note('ingest ack', JSON.stringify(ack).slice(0, 300));
        return;
      }
      this.batchesAcked++;
      this.imagesAcked += count;
    });
    ws.on('close', (code) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      if (!this.closing) {
        this.problems.note('ingest socket', `closed by the server with ${code}`);
        setTimeout(() => void this.connect().catch((err: Error) => this.problems.note('ingest socket', `reconnect failed: ${err.message}`)), 1000);
      }
    });
    this.inflight.clear();
    this.ws = ws;
  }

  start(reconnectEveryMs = 60_000): void {
    this.timers.push(setInterval(() => this.tick(), 100));
    this.timers.push(setInterval(() => void this.reconnect(), reconnectEveryMs));
  }

  /** Ends the publisher socket cleanly and opens a new one, so `/ingest` open and close run too. */
  private async reconnect(): Promise<void> {
    if (this.closing || !this.ws) return;
    this.closing = true;
    try {
      await this.close();
      await this.connect();
      this.reconnects++;
    } catch (err) {
      this.problems.note('ingest socket', `reconnect failed: ${(err as Error).message}`);
    } finally {
      this.closing = false;
    }
  }

  private async close(): Promise<void> {
    for (let t = 0; this.inflight.size > 0 && t < 3000; t += 20) await sleep(20);
    if (this.inflight.size) this.problems.note('ingest ack', `${this.inflight.size} batches unacked after 3 s`);
    const ws = this.ws;
    if (!ws) return;
    const closed = new Promise<void>((ok) => ws.once('close', () => ok()));
    ws.close(1000);
    await Promise.race([closed, sleep(5000)]);
    if (this.ws === ws) {
      ws.terminate();
      this.ws = undefined;
    }
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.closing = true;
    await this.close();
  }

  private tick(): void {
    const now = performance.now();
    this.budget += (this.perSecond * Math.min(1000, now - (this.last ?? now - 100))) / 1000;
    this.last = now;
    const n = Math.floor(this.budget);
    if (n === 0) return;
    this.budget -= n;
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN || this.closing) return;
    if (this.inflight.size >= 20) {
      this.skipped++;
      return;
    }
    const id = this.nextId++;
    this.inflight.set(id, n);
    const data = Array.from({ length: n }, () => this.image(pickOne(this.markets)));
    ws.send(JSON.stringify({ id, data }));
  }

  /** A full image: three levels a side per runner (one line on line markets), prices on a slow random walk. */
  private image(m: OpenMarket): Record<string, unknown> {
    const p = Math.min(40, Math.max(1.05, (this.prices.get(m.mid) ?? 1.5 + Math.random() * 4) * (1 + (Math.random() - 0.5) * 0.02)));
    this.prices.set(m.mid, p);
    const size = () => round2(10 + Math.random() * 2000);
    return {
      kind: 'odds', mid: m.mid, ts: Date.now(), st: Math.random() < 0.02 ? 'SUSPENDED' : 'OPEN', ip: true,
      r: m.rids.map((rid, i) => {
        // A line market's one runner: No at the line, Yes a run above, at even rates.
        if (m.line) return { rid, st: 'ACTIVE', b: [[Math.round(p * 10) + 1, 100]], l: [[Math.round(p * 10), 100]] };
        const q = round2(p + i * 0.5);
        return {
          rid, st: 'ACTIVE',
          b: [[q, size()], [round2(q - 0.01), size()], [round2(q - 0.02), size()]],
          l: [[round2(q + 0.02), size()], [round2(q + 0.04), size()], [round2(q + 0.06), size()]],
        };
      }),
    };
  }

  toJSON(): Record<string, unknown> {
    return { imagesAcked: this.imagesAcked, batchesAcked: this.batchesAcked, skipped: this.skipped, reconnects: this.reconnects };
  }
}

// ---- reference ingest ----

/** Every few seconds, flips `s` (suspended/open) of two markets through `POST /api/v1/ingest`. */
export class StateToggler {
  toggles = 0;
  private timer: NodeJS.Timeout | undefined;
  private busy = false;

  constructor(private readonly http: Http, private readonly markets: OpenMarket[], private readonly problems: Problems) {}

  start(everyMs = 5000): void {
    this.timer = setInterval(() => void this.tick(), everyMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    for (let t = 0; this.busy && t < 10_000; t += 20) await sleep(20);
  }

  private async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    const ms = pickSome(this.markets, 2);
    try {
      const a = await this.http.request('POST', '/api/v1/ingest', JSON.stringify({ data: ms.map((m) => ({ kind: 'market', mid: m.mid, s: !m.s })) }));
      if (a.status !== 200) this.problems.note('state toggle', `answered ${a.status}: ${a.text.slice(0, 200)}`);
      else {
        for (const m of ms) m.s = !m.s;
        this.toggles += ms.length;
      }
    } catch (err) {
      this.problems.note('state toggle', (err as Error).message);
    } finally {
      this.busy = false;
    }
  }
}

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

// ---- REST subscribe and unsubscribe ----

/**
 * REST subscribe changes the stored set of the client `public`, which every open socket shares:
 * all of them gain the markets at once. A window subscribes the reserved markets (which no socket
 * holds itself) and one fresh unlisted ID, lets `check` compare the gauge, holds, and unsubscribes.
 */
export class RestSubscriptions {
  windows = 0;
  private n = 0;

  constructor(private readonly http: Http, private readonly reserved: readonly string[], private readonly problems: Problems) {}

  async window(holdMs: number, check: (added: number) => Promise<void>): Promise<void> {
    const ids = [...this.reserved, `soak.r.${++this.n}`];
    const body = JSON.stringify({ data: ids });
    const sub = await this.post('/api/v1/subscribe', body, `Subscribed from market ${ids.join(',')}`);
    try {
      if (sub) await check(ids.length);
      await sleep(holdMs);
    } finally {
      await this.post('/api/v1/unsubscribe', body, `Unsubscribed from market ${ids.join(',')}`);
      this.windows++;
    }
  }

  private async post(path: string, body: string, message: string): Promise<boolean> {
    try {
      const a = await this.http.request('POST', path, body);
      if (a.status === 200 && a.text === JSON.stringify({ status: 1, message })) return true;
      this.problems.note('REST subscription', `${path} answered ${a.status}: ${a.text.slice(0, 200)}`);
    } catch (err) {
      this.problems.note('REST subscription', `${path}: ${(err as Error).message}`);
    }
    return false;
  }
}
