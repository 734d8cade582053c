/**
 * A publisher on the service's `/ingest` socket (JSON), pipelined: up to `window` batches in
 * flight, their acks matched in order. Each batch resolves with its ack: accepted (`status` 1,
 * with the items the service refused one by one in `refused`) or refused whole (`status` 0,
 * reference data the service would not write). Refusals are data, and the adapters go on after
 * them; only a broken connection (closed, an ack out of order, a frame that is not JSON) fails the
 * publisher, and then every batch in flight and every later call rejects with the reason.
 *
 *   const publisher = await Publisher.connect({ url: 'ws://127.0.0.1:8080/ingest', key, liveMs });
 *   await publisher.room();             // resolves when a batch may go; rejects once failed
 *   const ack = await publisher.send(items);
 *   publisher.heartbeat();              // an empty batch: a sign of life while there is nothing to send
 *   await publisher.flush();            // every batch sent so far acked
 *   await publisher.close();
 *
 * The API key travels in the `x-api-key` header, never in the URL. `liveMs` is the connection's
 * liveness interval (`/ingest?live=`): the service takes markets this connection feeds as stale
 * when it hears nothing for two of them, so a caller sends heartbeats while it has nothing else.
 */
import WebSocket from 'ws';
import type { OutItem } from './translate.js';

interface PublisherOptions {
  url: string;
  key?: string;
  /** Batches in flight at most; the service allows 128 a connection by default. */
  window?: number;
  liveMs?: number;
}

const DEFAULT_WINDOW = 32;

/** The connection failed or broke the protocol: nothing more can be sent on it. */
export class PublishError extends Error {}

/** An item the service refused on its own: its index in the batch, its market and the service's words. */
export interface Refused {
  i: number;
  mid?: string;
  message: string;
}

export interface Ack {
  /** 1: the batch was taken, less `refused`; 0: the batch was refused whole. */
  status: 0 | 1;
  message: string;
  refused: Refused[];
}

interface Pending {
  id: number;
  ok: (ack: Ack) => void;
  fail: (err: PublishError) => void;
}

const MAX_ID = 0xffffffff;

type Obj = Record<string, unknown>;

function refusedOf(v: unknown): Refused[] {
  if (!Array.isArray(v)) return [];
  return v.filter((r): r is Obj => !!r && typeof r === 'object').map((r) => ({
    i: Number(r.i), message: String(r.message ?? ''), ...(typeof r.mid === 'string' ? { mid: r.mid } : {}),
  }));
}

export class Publisher {
  private readonly pending: Pending[] = [];
  private waiters: (() => void)[] = [];
  private failure: PublishError | undefined;
  private lastId = 0;
  private broke!: (err: PublishError) => void;
  /** Settles with the reason once the publisher can send no more. */
  readonly broken = new Promise<PublishError>((ok) => (this.broke = ok));

  private constructor(private readonly ws: WebSocket, private readonly window: number) {
    ws.on('message', (data: Buffer) => this.received(data.toString('utf8')));
    ws.on('close', (code, reason) => this.fail(new PublishError(`connection closed: code ${code}${reason.length ? ` "${reason.toString()}"` : ''}`)));
    ws.on('error', (err) => this.fail(new PublishError(`connection failed: ${err.message}`)));
  }

  static connect(opts: PublisherOptions): Promise<Publisher> {
    const url = new URL(opts.url);
    if (opts.liveMs !== undefined) url.searchParams.set('live', String(opts.liveMs));
    const ws = new WebSocket(url, ['odds.v1.json'], { headers: opts.key ? { 'x-api-key': opts.key } : {} });
    return new Promise((resolve, reject) => {
      ws.once('open', () => {
        ws.removeAllListeners('error');
        resolve(new Publisher(ws, opts.window ?? DEFAULT_WINDOW));
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

  send(items: OutItem[]): Promise<Ack> {
    return this.sendEncoded(items.map((item) => JSON.stringify(item)));
  }

  /** The same, for items already encoded as JSON one by one; an empty list is a heartbeat. */
  sendEncoded(items: readonly string[]): Promise<Ack> {
    if (this.failure) return handled(Promise.reject(this.failure));
    const id = (this.lastId = this.lastId === MAX_ID ? 1 : this.lastId + 1);
    const acked = new Promise<Ack>((ok, fail) => this.pending.push({ id, ok, fail }));
    this.ws.send(`{"id":${id},"data":[${items.join(',')}]}`);
    return handled(acked);
  }

  heartbeat(): Promise<Ack> {
    return this.sendEncoded([]);
  }

  /** Resolves once every batch sent so far is acked; rejects with the failure. */
  async flush(): Promise<void> {
    while (!this.failure && this.pending.length) await new Promise<void>((ok) => this.waiters.push(ok));
    if (this.failure) throw this.failure;
  }

  close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    const closed = new Promise<void>((ok) => this.ws.once('close', () => ok()));
    this.ws.close(1000, 'publisher done');
    return closed;
  }

  private received(text: string): void {
    let msg: Obj;
    try {
      msg = JSON.parse(text) as Obj;
    } catch {
      return this.fail(new PublishError(`the service sent a frame that is not JSON: ${text.slice(0, 200)}`));
    }
    if (msg.op !== 'ack') return; // heartbeats and the like
    const batch = this.pending.shift();
    const message = String(msg.message ?? '');
    if (!batch) return this.fail(new PublishError(`the service acked batch ${String(msg.id)}, which is not in flight: ${message}`));
    if (msg.id !== batch.id) return this.fail(new PublishError(`the service acked batch ${String(msg.id)} where batch ${batch.id} was next`));
    batch.ok({ status: msg.status === 1 ? 1 : 0, message, refused: refusedOf(msg.refused) });
    this.wake();
  }

  private fail(err: PublishError): void {
    if (this.failure) return;
    this.failure = err;
    this.broke(err);
    for (const batch of this.pending.splice(0)) batch.fail(err);
    this.wake();
    if (this.ws.readyState === WebSocket.OPEN) this.ws.close(1000, 'publisher stopped');
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
