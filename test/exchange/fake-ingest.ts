/**
 * Fakes for the publisher (exchange/publisher.ts): its socket, which keeps what was sent and
 * answers when the test says, as the service would; its clock, which moves when the test says;
 * and the bounds a fake `/ingest` server announces at the handshake, as the service does.
 */
import type { WebSocketServer } from 'ws';
import type { IngestListener, IngestSocket } from '../../src/exchange/publisher.js';
import { FakeClock } from '../helpers/clock.js';

export { FakeClock };
import { limitHeaders, type IngestLimits } from '../../src/ingest/limits.js';

/** The service's defaults (docs/configuration.md). */
export const DEFAULT_LIMITS: IngestLimits = { maxInFlight: 128, queueBytes: 8 << 20, keyQueueBytes: 32 << 20, maxItems: 5000, maxMessageBytes: 1 << 20 };

/** Has a `ws` server announce `limits` on each handshake's 101, as the service's /ingest does. */
export function announceLimits(wss: WebSocketServer, limits: IngestLimits = DEFAULT_LIMITS): void {
  wss.on('headers', (headers) => headers.push(...limitHeaders(limits).map(([name, value]) => `${name}: ${value}`)));
}

export class FakeSocket implements IngestSocket {
  readonly sent: string[] = [];
  open = true;
  listener: IngestListener | undefined;
  private ended!: () => void;
  readonly closed = new Promise<void>((ok) => (this.ended = ok));

  send(text: string): void {
    this.sent.push(text);
  }

  close(): void {
    this.open = false;
    this.listener?.lost('connection closed: code 1000');
    this.ended();
  }

  listen(listener: IngestListener): void {
    this.listener = listener;
  }

  /** The id of the n-th frame sent. */
  id(n: number): number {
    return (JSON.parse(this.sent[n]) as { id: number }).id;
  }

  /** The service's ack of the n-th frame sent; `refusal` answers it status 0 with that code and message. */
  ack(n: number, refusal?: { code: string; message: string }): void {
    const answer = refusal ? { status: 0, ...refusal } : { status: 1, message: 'Ingested 0 items' };
    this.listener!.message(JSON.stringify({ op: 'ack', id: this.id(n), ...answer }));
  }
}

