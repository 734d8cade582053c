/**
 * A publisher on the service's `/ingest` socket (JSON), pipelined within the bounds the service
 * announced at the handshake (window.ts: batches and their bytes in flight, and how large a batch
 * to cut), its acks matched in order. Each batch resolves with its ack: accepted (`status` 1,
 * with the items the service refused one by one in `refused`) or refused whole (`status` 0,
 * reference data the service would not write). A batch the service refused for a limit anyway
 * (`code` LIMIT: another connection of the key held its bytes) is not answered yet: once every
 * batch sent before it is acked it is sent again, after a backoff while that keeps happening,
 * and nothing new goes meanwhile. Refusals are data, and the adapters go on after
 * them; only a broken connection (closed, an ack out of order, a frame that is not JSON) fails the
 * publisher, and then every batch in flight and every later call rejects with the reason.
 *
 *   const publisher = await Publisher.connect({ url: 'ws://127.0.0.1:8080/ingest', key, source });
 *   await publisher.room(bytes);        // resolves when a batch of these bytes may go; rejects once failed
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
import type { IncomingMessage } from 'node:http';
import { readLimits, type IngestLimits } from '../ingest/limits.js';
import { systemClock, type Clock } from '../lib/clock.js';
import { Backoff } from '../lib/retry.js';
import type { IngestItemInput, ItemRefusal } from '../odds/messages.js';
import { LIVENESS } from '../relay/freshness.js';
import { Window } from './window.js';
import type { BatchLimits } from './batch.js';

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

/** What the publisher speaks for: it sends heartbeats only while its source is current. */
export interface Source {
  readonly current: boolean;
}

interface PublisherOptions {
  /** Batches in flight at most, within what the service announced (default 32). */
  window?: number;
  /** The bounds the service announced at the handshake; none: one batch at a time. */
  limits?: IngestLimits;
  /** The liveness interval the connection declared. */
  liveMs?: number;
  source?: Source;
  clock?: Clock;
}

interface ConnectOptions extends Omit<PublisherOptions, 'liveMs' | 'limits'> {
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

/** Waits before sending again a batch refused for a limit when the one before was too: from 25 ms to 1 s. */
const RESEND_BACKOFF = { minMs: 25, maxMs: 1000 } as const;

const ALWAYS: Source = { current: true };

/** The connection failed or broke the protocol: nothing more can be sent on it. */
export class PublishError extends Error {}

export interface Ack {
  /** 1: the batch was taken, less `refused`; 0: the batch was refused whole. */
  status: 0 | 1;
  message: string;
  refused: ItemRefusal[];
}

interface InFlight {
  id: number;
  /** The items, encoded and joined: what is sent again after a refusal for a limit. */
  items: string;
  /** The message's bytes on the wire, as the service counts them. */
  bytes: number;
  heartbeat: boolean;
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
  /** Batches sent again after the service refused them for a limit. */
  resent = 0;
  readonly liveMs: number;
  /** What was sent and not yet answered, in order. */
  private readonly pending: InFlight[] = [];
  /** Refused for a limit, in order: sent again once `pending` is empty. */
  private readonly held: InFlight[] = [];
  private readonly window: Window;
  private readonly backoff = new Backoff(RESEND_BACKOFF.minMs, RESEND_BACKOFF.maxMs);
  private resend: { stop(): void } | undefined;
  /** Rounds of sending again since a batch was last taken. */
  private rounds = 0;
  private waiters: (() => void)[] = [];
  private failure: PublishError | undefined;
  private lastId = 0;
  private lastSent: number;
  private readonly source: Source;
  private readonly clock: Clock;
  private readonly beat: { stop(): void };
  private broke!: (err: PublishError) => void;
  /** Settles with the reason once the publisher can send no more. */
  readonly broken = new Promise<PublishError>((ok) => (this.broke = ok));

  constructor(private readonly socket: IngestSocket, opts: PublisherOptions = {}) {
    this.window = new Window(opts.limits, opts.window ?? DEFAULT_WINDOW);
    this.liveMs = opts.liveMs ?? LIVENESS.default;
    this.source = opts.source ?? ALWAYS;
    this.clock = opts.clock ?? systemClock;
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
    let limits: IngestLimits | undefined;
    // The 101 answer announces the bounds this connection keeps (docs/ingest.md).
    ws.once('upgrade', (res: IncomingMessage) => (limits = readLimits((name) => headerText(res.headers[name]))));
    return new Promise((resolve, reject) => {
      ws.once('open', () => {
        ws.removeAllListeners('error');
        resolve(new Publisher(new WsSocket(ws), { ...opts, liveMs, limits }));
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

  /** Batches sent and not yet answered, those waiting to go again after a refusal for a limit included. */
  get inFlight(): number {
    return this.pending.length + this.held.length;
  }

  /** How large a batch to cut, by the service's bounds. */
  get batch(): BatchLimits {
    return this.window.batch;
  }

  /** The largest message the service takes. */
  get maxMessageBytes(): number {
    return this.window.maxMessageBytes;
  }

  get failed(): PublishError | undefined {
    return this.failure;
  }

  /** Resolves once a batch of `bytes` (its message on the wire) may be sent within the window. */
  async room(bytes = 0): Promise<void> {
    while (!this.failure && (this.held.length || !this.window.fits(bytes))) await new Promise<void>((ok) => this.waiters.push(ok));
    if (this.failure) throw this.failure;
  }

  send(items: IngestItemInput[]): Promise<Ack> {
    return this.sendEncoded(items.map((item) => JSON.stringify(item)));
  }

  /** The same, for items already encoded as JSON one by one. */
  sendEncoded(items: readonly string[]): Promise<Ack> {
    if (this.failure) return handled(Promise.reject(this.failure));
    const joined = items.join(',');
    return handled(new Promise<Ack>((ok, fail) => this.transmit({ id: 0, items: joined, bytes: 0, heartbeat: !items.length, ok, fail })));
  }

  /** Resolves once every batch sent so far is acked; rejects with the failure. */
  async flush(): Promise<void> {
    while (!this.failure && this.inFlight) await new Promise<void>((ok) => this.waiters.push(ok));
    if (this.failure) throw this.failure;
  }

  close(): Promise<void> {
    this.beat.stop();
    this.resend?.stop();
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
    this.window.remove(batch.bytes);
    this.answered(batch, msg, message);
    if (this.held.length && !this.pending.length) this.sendHeldLater();
    this.wake();
  }

  lost(reason: string): void {
    this.fail(new PublishError(reason));
  }

  /** A batch's ack: one refused for a limit is held to go again; any other answers its caller. */
  private answered(batch: InFlight, msg: Obj, message: string): void {
    // A heartbeat refused for a limit was heard all the same: only batches of items go again.
    if (msg.status !== 1 && msg.code === 'LIMIT' && !batch.heartbeat) return void this.held.push(batch);
    if (msg.status === 1 && !batch.heartbeat) {
      this.rounds = 0;
      this.backoff.reset();
    }
    batch.ok({ status: msg.status === 1 ? 1 : 0, message, refused: refusedOf(msg.refused) });
  }

  /** Numbers a batch and sends it; `bytes` is its message's size on the wire. */
  private transmit(batch: InFlight): void {
    batch.id = this.lastId = this.lastId === MAX_ID ? 1 : this.lastId + 1;
    const text = `{"id":${batch.id},"data":[${batch.items}]}`;
    batch.bytes = Buffer.byteLength(text);
    this.pending.push(batch);
    this.window.add(batch.bytes);
    this.lastSent = this.clock.now();
    this.socket.send(text);
  }

  /**
   * Every batch before the refused ones is answered: they go again, in order, at once the first
   * time and after a growing pause while they keep being refused (another connection of the key
   * holds its bytes until its own batches are answered).
   */
  private sendHeldLater(): void {
    if (this.resend) return;
    if (!this.rounds++) return this.sendHeld();
    this.resend = this.clock.after(this.backoff.next(), () => {
      this.resend = undefined;
      this.sendHeld();
    });
  }

  private sendHeld(): void {
    if (this.failure) return;
    this.resent += this.held.length;
    for (const batch of this.held.splice(0)) this.transmit(batch);
    this.wake();
  }

  /**
   * A heartbeat once nothing went for half an interval, while the source is current. It is an
   * empty batch, acked in order like any other, and goes even when the window is full (which
   * keeps room for it): a service slow to ack must still hear that this publisher is alive.
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
    this.resend?.stop();
    this.broke(err);
    for (const batch of [...this.pending.splice(0), ...this.held.splice(0)]) batch.fail(err);
    this.wake();
    if (this.socket.open) this.socket.close(1000, 'publisher stopped');
  }

  private wake(): void {
    for (const ok of this.waiters.splice(0)) ok();
  }
}

/** One value of a response header as text. */
const headerText = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

/** A rejection nobody awaits must not crash the process: the failure also surfaces through room() and flush(). */
function handled<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined);
  return p;
}
