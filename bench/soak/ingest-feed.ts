/**
 * The soak's publisher: odds images through one `/ingest` socket at a bounded rate, each batch
 * acked, reconnecting when the socket drops.
 */
import WebSocket from 'ws';
import type { AckMessage } from '../../src/odds/messages.js';
import type { OpenMarket } from './catalog.js';
import { Problems, pickOne, round2, sleep } from './util.js';

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
