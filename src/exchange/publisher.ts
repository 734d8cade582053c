/**
 * A publisher on the service's `/ingest` socket (JSON), pipelined: up to `window` batches in
 * flight, their acks matched in order. The first refused batch fails the publisher: that batch's
 * promise and every later one reject with the service's message, and nothing more is sent.
 *
 *   const publisher = await Publisher.connect({ url: 'ws://127.0.0.1:8080/ingest', key });
 *   await publisher.room();             // resolves when a batch may go; rejects once failed
 *   publisher.send(items);              // resolves with the ack's message, rejects on refusal
 *   await publisher.flush();            // every batch sent so far acked
 *   await publisher.close();
 *
 * The API key travels in the `x-api-key` header, never in the URL.
 */
import WebSocket from 'ws';
import type { IngestItemInput } from '../odds/messages.js';

interface PublisherOptions {
  url: string;
  key?: string;
  /** Batches in flight at most; the service allows 128 a connection by default. */
  window?: number;
}

const DEFAULT_WINDOW = 32;

/** The service refused a batch, or the connection failed. */
export class PublishError extends Error {}

interface Pending {
  id: number;
  ok: (message: string) => void;
  fail: (err: PublishError) => void;
}

const MAX_ID = 0xffffffff;

export class Publisher {
  private readonly pending: Pending[] = [];
  private waiters: (() => void)[] = [];
  private failure: PublishError | undefined;
  private lastId = 0;

  private constructor(private readonly ws: WebSocket, private readonly window: number) {
    ws.on('message', (data: Buffer) => this.received(data.toString('utf8')));
    ws.on('close', (code, reason) => this.fail(new PublishError(`connection closed: code ${code}${reason.length ? ` "${reason.toString()}"` : ''}`)));
    ws.on('error', (err) => this.fail(new PublishError(`connection failed: ${err.message}`)));
  }

  static connect(opts: PublisherOptions): Promise<Publisher> {
    const ws = new WebSocket(opts.url, ['odds.v1.json'], { headers: opts.key ? { 'x-api-key': opts.key } : {} });
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

  /** Resolves once a batch may be sent without passing the window. */
  async room(): Promise<void> {
    while (!this.failure && this.pending.length >= this.window) await new Promise<void>((ok) => this.waiters.push(ok));
    if (this.failure) throw this.failure;
  }

  send(items: IngestItemInput[]): Promise<string> {
    return this.sendEncoded(items.map((item) => JSON.stringify(item)));
  }

  /** The same, for items already encoded as JSON one by one (batch.ts measures batches that way). */
  sendEncoded(items: readonly string[]): Promise<string> {
    if (this.failure) return handled(Promise.reject(this.failure));
    const id = (this.lastId = this.lastId === MAX_ID ? 1 : this.lastId + 1);
    const acked = new Promise<string>((ok, fail) => this.pending.push({ id, ok, fail }));
    this.ws.send(`{"id":${id},"data":[${items.join(',')}]}`);
    return handled(acked);
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
    let msg: { op?: unknown; id?: unknown; status?: unknown; message?: unknown };
    try {
      msg = JSON.parse(text) as typeof msg;
    } catch {
      return this.fail(new PublishError(`the service sent a frame that is not JSON: ${text.slice(0, 200)}`));
    }
    if (msg.op !== 'ack') return; // heartbeats and the like
    const batch = this.pending.shift();
    const message = String(msg.message ?? '');
    if (!batch) return this.fail(new PublishError(`the service acked batch ${String(msg.id)}, which is not in flight: ${message}`));
    if (msg.status !== 1) {
      this.pending.unshift(batch);
      return this.fail(new PublishError(`batch ${batch.id} refused: ${message}`));
    }
    if (msg.id !== batch.id) return this.fail(new PublishError(`the service acked batch ${String(msg.id)} where batch ${batch.id} was next`));
    batch.ok(message);
    this.wake();
  }

  private fail(err: PublishError): void {
    if (this.failure) return;
    this.failure = err;
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
