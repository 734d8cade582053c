/**
 * A publisher on the service's `/ingest` socket (JSON), pipelined: up to `window` batches in
 * flight, their acks matched in order. Each batch resolves with its ack: accepted (`status` 1,
 * with the items the service refused one by one in `refused`) or refused whole (`status` 0,
 * reference data the service would not write). Refusals are data, and the adapters go on after
 * them; only a broken connection (closed, an ack out of order, a frame that is not JSON) fails the
 * publisher, and then every batch in flight and every later call rejects with the reason.
 *
 *   const publisher = await Publisher.connect({ url: 'ws://127.0.0.1:8080/ingest', key, source });
 *   await publisher.room();             // resolves when a batch may go; rejects once failed
 *   const ack = await publisher.send(items);
 *   await publisher.flush();            // every batch sent so far acked
 *   await publisher.close();
 *
 * The API key travels in the `x-api-key` header, never in the URL. The connection declares its
 * liveness interval (`/ingest?live=`, from `liveMs`, else a `live` already in the URL, else the
 * service's default of 5 s): the service takes the markets it feeds as stale when it hears nothing
 * for two intervals. So whenever nothing was sent for half an interval, the publisher sends a
 * heartbeat (an empty batch) itself, as long as its `source` says its data is current: a replay
 * waiting out a long gap of its recording stays live, while a live adapter whose exchange went
 * quiet lets its markets go stale rather than vouch for prices it no longer receives.
 */
import WebSocket from 'ws';
import type { IngestItemInput, ItemRefusal } from '../odds/messages.js';
import { LIVENESS } from '../relay/freshness.js';

/**
 * How long the tools wait for a socket's handshake: something that accepts the connection and
 * never answers (another program on the port, a proxy that hangs) is reported, not waited on.
 */
export const HANDSHAKE_TIMEOUT_MS = 10_000;

/** The socket a publisher speaks over: a `ws` client, or a fake in tests. */
export interface IngestSocket {
  readonly open: boolean;
  /** Resolves once the connection is closed, whoever closed it. */
  readonly closed: Promise<void>;
  send(text: string): void;
  close(code: number, reason: string): void;
  /** Hands every frame that arrives, and the end of the connection, to `listener`. */
  listen(listener: IngestListener): void;
}

export interface IngestListener {
  message(text: string): void;
  /** The connection ended or failed: nothing more can be sent on it. */
  lost(reason: string): void;
}

/** Time as the publisher needs it: the real clock, or one a test moves. */
export interface Clock {
  now(): number;
  /** Calls `tick` every `ms` until `stop()`. */
  every(ms: number, tick: () => void): { stop(): void };
}

/** What the publisher speaks for: it sends heartbeats only while its source is current. */
export interface Source {
  readonly current: boolean;
}

interface PublisherOptions {
  /** Batches in flight at most; the service allows 128 a connection by default. */
  window?: number;
  /** The liveness interval the connection declared. */
  liveMs?: number;
  source?: Source;
  clock?: Clock;
}

interface ConnectOptions extends Omit<PublisherOptions, 'liveMs'> {
  url: string;
  key?: string;
  /** The liveness interval to declare; without it, a `live` in the URL, else the service's default. */
  liveMs?: number;
  /** It publishes a recording: the service judges its source times by their order alone (`/ingest?replay=1`). */
  replay?: boolean;
}

const DEFAULT_WINDOW = 32;
/** A heartbeat goes once nothing was sent for this share of the liveness interval: the service waits two. */
const QUIET_SHARE = 0.5;
/** Looked at this many times an interval, so a heartbeat is at most an eighth of it late. */
const TICKS = 8;

const REAL_CLOCK: Clock = {
  now: () => performance.now(),
  every(ms, tick) {
    const timer = setInterval(tick, ms);
    // The socket keeps the process alive while it is open; the heartbeat timer alone must not.
    timer.unref();
    return { stop: () => clearInterval(timer) };
  },
};
const ALWAYS: Source = { current: true };

/** The connection failed or broke the protocol: nothing more can be sent on it. */
export class PublishError extends Error {}

export interface Ack {
  /** 1: the batch was taken, less `refused`; 0: the batch was refused whole. */
  status: 0 | 1;
  message: string;
  refused: ItemRefusal[];
}

interface Pending {
  id: number;
  ok: (ack: Ack) => void;
  fail: (err: PublishError) => void;
}

const MAX_ID = 0xffffffff;

type Obj = Record<string, unknown>;

function refusedOf(v: unknown): ItemRefusal[] {
  if (!Array.isArray(v)) return [];
  return v.filter((r): r is Obj => !!r && typeof r === 'object').map((r) => ({
    i: Number(r.i), mid: typeof r.mid === 'string' ? r.mid : '', message: String(r.message ?? ''),
  }));
}

/** The `ws` client as an IngestSocket. */
class WsSocket implements IngestSocket {
  readonly closed: Promise<void>;

  constructor(private readonly ws: WebSocket) {
    this.closed = new Promise((ok) => ws.once('close', () => ok()));
  }

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  send(text: string): void {
    this.ws.send(text);
  }

  close(code: number, reason: string): void {
    this.ws.close(code, reason);
  }

  listen(listener: IngestListener): void {
    this.ws.on('message', (data: Buffer) => listener.message(data.toString('utf8')));
    this.ws.on('close', (code, reason) => listener.lost(`connection closed: code ${code}${reason.length ? ` "${reason.toString()}"` : ''}`));
    this.ws.on('error', (err) => listener.lost(`connection failed: ${err.message}`));
  }
}

export class Publisher implements IngestListener {
  /** Heartbeats sent. */
  heartbeats = 0;
  readonly liveMs: number;
  private readonly pending: Pending[] = [];
  private waiters: (() => void)[] = [];
  private failure: PublishError | undefined;
  private lastId = 0;
  private lastSent: number;
  private readonly window: number;
  private readonly source: Source;
  private readonly clock: Clock;
  private readonly beat: { stop(): void };
  private broke!: (err: PublishError) => void;
  /** Settles with the reason once the publisher can send no more. */
  readonly broken = new Promise<PublishError>((ok) => (this.broke = ok));

  constructor(private readonly socket: IngestSocket, opts: PublisherOptions = {}) {
    this.window = opts.window ?? DEFAULT_WINDOW;
    this.liveMs = opts.liveMs ?? LIVENESS.default;
    this.source = opts.source ?? ALWAYS;
    this.clock = opts.clock ?? REAL_CLOCK;
    this.lastSent = this.clock.now();
    socket.listen(this);
    this.beat = this.clock.every(this.liveMs / TICKS, () => this.tick());
  }

  static connect(opts: ConnectOptions): Promise<Publisher> {
    const url = new URL(opts.url);
    if (opts.liveMs !== undefined || !url.searchParams.has('live')) url.searchParams.set('live', String(opts.liveMs ?? LIVENESS.default));
    if (opts.replay) url.searchParams.set('replay', '1');
    // A `live` the service cannot take refuses the handshake with its own words.
    const liveMs = Number(url.searchParams.get('live'));
    const ws = new WebSocket(url, ['odds.v1.json'], { handshakeTimeout: HANDSHAKE_TIMEOUT_MS, headers: opts.key ? { 'x-api-key': opts.key } : {} });
    return new Promise((resolve, reject) => {
      ws.once('open', () => {
        ws.removeAllListeners('error');
        resolve(new Publisher(new WsSocket(ws), { ...opts, liveMs }));
      });
      ws.once('error', (err) => reject(new PublishError(`cannot connect to ${opts.url}: ${err.message}`)));
      ws.once('unexpected-response', (req, res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (s: string) => (body += s.slice(0, 2000)));
        res.on('end', () => {
          req.destroy();
          let message = body;
          try {
            message = (JSON.parse(body) as { message?: string }).message ?? body;
          } catch {
            // not the service's JSON error body: show it as it came
          }
          reject(new PublishError(`cannot connect to ${opts.url}: ${res.statusCode} ${message}`.trim()));
        });
      });
    });
  }

  get inFlight(): number {
    return this.pending.length;
  }

  get failed(): PublishError | undefined {
    return this.failure;
  }

  /** Resolves once a batch may be sent without passing the window. */
  async room(): Promise<void> {
    while (!this.failure && this.pending.length >= this.window) await new Promise<void>((ok) => this.waiters.push(ok));
    if (this.failure) throw this.failure;
  }

  send(items: IngestItemInput[]): Promise<Ack> {
    return this.sendEncoded(items.map((item) => JSON.stringify(item)));
  }

  /** The same, for items already encoded as JSON one by one. */
  sendEncoded(items: readonly string[]): Promise<Ack> {
    if (this.failure) return handled(Promise.reject(this.failure));
    const id = (this.lastId = this.lastId === MAX_ID ? 1 : this.lastId + 1);
    const acked = new Promise<Ack>((ok, fail) => this.pending.push({ id, ok, fail }));
    this.lastSent = this.clock.now();
    this.socket.send(`{"id":${id},"data":[${items.join(',')}]}`);
    return handled(acked);
  }

  /** Resolves once every batch sent so far is acked; rejects with the failure. */
  async flush(): Promise<void> {
    while (!this.failure && this.pending.length) await new Promise<void>((ok) => this.waiters.push(ok));
    if (this.failure) throw this.failure;
  }

  close(): Promise<void> {
    this.beat.stop();
    if (this.socket.open) this.socket.close(1000, 'publisher done');
    return this.socket.closed;
  }

  message(text: string): void {
    let msg: Obj;
    try {
      msg = JSON.parse(text) as Obj;
    } catch {
      return this.fail(new PublishError(`the service sent a frame that is not JSON: ${text.slice(0, 200)}`));
    }
    if (msg.op !== 'ack') return; // the service's notices and the like
    const batch = this.pending.shift();
    const message = String(msg.message ?? '');
    if (!batch) return this.fail(new PublishError(`the service acked batch ${String(msg.id)}, which is not in flight: ${message}`));
    if (msg.id !== batch.id) return this.fail(new PublishError(`the service acked batch ${String(msg.id)} where batch ${batch.id} was next`));
    batch.ok({ status: msg.status === 1 ? 1 : 0, message, refused: refusedOf(msg.refused) });
    this.wake();
  }

  lost(reason: string): void {
    this.fail(new PublishError(reason));
  }

  /**
   * A heartbeat once nothing went for half an interval, while the source is current. It is an
   * empty batch, acked in order like any other, and goes even when the window is full: a service
   * slow to ack must still hear that this publisher is alive.
   */
  private tick(): void {
    if (this.failure || !this.source.current || this.clock.now() - this.lastSent < this.liveMs * QUIET_SHARE) return;
    this.heartbeats++;
    void this.sendEncoded([]);
  }

  private fail(err: PublishError): void {
    if (this.failure) return;
    this.failure = err;
    this.beat.stop();
    this.broke(err);
    for (const batch of this.pending.splice(0)) batch.fail(err);
    this.wake();
    if (this.socket.open) this.socket.close(1000, 'publisher stopped');
  }

  private wake(): void {
    for (const ok of this.waiters.splice(0)) ok();
  }
}

/** A rejection nobody awaits must not crash the process: the failure also surfaces through room() and flush(). */
function handled<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}
