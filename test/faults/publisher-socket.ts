/**
 * A publisher on the `/ingest` socket (JSON) that may send batches without
 * waiting for their acks and keeps every ack it got, in order of arrival.
 * Not a test file itself.
 */
import WebSocket from 'ws';

export interface IngestAck {
  id: number;
  status: 0 | 1;
  message: string;
  /** Items refused one by one, when any were. */
  refused?: { i: number; mid: string; message: string }[];
}

export class Publisher {
  /** Acks in the order they arrived. */
  readonly acks: IngestAck[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: (() => void)[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      const msg = JSON.parse(data.toString('utf8')) as IngestAck & { op: string };
      if (msg.op === 'ack') this.acks.push({ id: msg.id, status: msg.status, message: msg.message, ...(msg.refused ? { refused: msg.refused } : {}) });
      for (const w of this.waiters.splice(0)) w();
    });
    this.closed = new Promise((ok) => ws.on('close', (code, reason) => {
      ok({ code, reason: reason.toString() });
      for (const w of this.waiters.splice(0)) w();
    }));
  }

  static open(base: string, headers: Record<string, string> = {}, query = ''): Promise<Publisher> {
    const ws = new WebSocket(base.replace(/^http/, 'ws') + '/ingest' + (query ? `?${query}` : ''), ['odds.v1.json'], { headers });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new Publisher(ws)));
      ws.once('error', reject);
    });
  }

  send(id: number, data: unknown[]): void {
    this.ws.send(JSON.stringify({ id, data }));
  }

  /** The ack of batch `id`, waiting up to `ms` for it. */
  async ack(id: number, ms = 10000): Promise<IngestAck> {
    const end = Date.now() + ms;
    for (;;) {
      const found = this.acks.find((a) => a.id === id);
      if (found) return found;
      const left = end - Date.now();
      if (left <= 0 || this.ws.readyState === WebSocket.CLOSED) throw new Error(`no ack for batch ${id} within ${ms} ms`);
      await new Promise<void>((ok) => {
        const timer = setTimeout(ok, left);
        this.waiters.push(() => { clearTimeout(timer); ok(); });
      });
    }
  }

  close(): void {
    this.ws.close();
  }
}
