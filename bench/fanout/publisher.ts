/**
 * The fan-out benchmark's publisher: odds images of a fixed set of markets sent through a server's
 * `/ingest` socket (`odds.v1.json`), each message acked. Two ways to send: paced (`run`: one
 * message per 5 ms carrying the updates due at a given rate) and the firehose (`firehose`: as fast
 * as acks allow, keeping a fixed number of batches in flight). It counts, per market, the updates
 * every server accepted (ack status 1), which is the `seq` of the newest image it must end with:
 * every server numbers each market's updates from 1 in its own epoch.
 */
import WebSocket from 'ws';
import { sleep } from '../lib/run.js';
import { Histogram } from '../lib/statistics.js';

export interface Market {
  mid: string;
  rids: number[];
}

interface InFlight {
  /** performance.now() when sent. */
  at: number;
  /** The first market's index and how many updates, taken round-robin from there. */
  start: number;
  count: number;
}

export class Publisher {
  private ws!: WebSocket;
  private nextId = 1;
  private cursor = 0;
  private readonly variants: string[][];
  /** Updates per market sent since the last resetStep (the paced steps' expected frames). */
  readonly updates: Uint32Array;
  /** Updates per market the server accepted since the socket opened: the newest `seq` of each. */
  readonly accepted: Uint32Array;
  acked = 0;
  refused = 0;
  /** Why the server closed the ingest socket, if it did: batches in flight then get no ack. */
  closedBecause: string | undefined;
  lastRefusal = '';
  readonly ackLatency = new Histogram();
  private readonly inFlight = new Map<number, InFlight>();
  /** While a firehose runs: sends batches until `pipeline` are in flight. */
  private pump: (() => void) | undefined;

  constructor(private readonly markets: Market[]) {
    this.updates = new Uint32Array(markets.length);
    this.accepted = new Uint32Array(markets.length);
    // A few different ladders per market: 3 runners, 3 back and 3 lay levels each.
    this.variants = markets.map((m, mi) => Array.from({ length: 8 }, (_, v) => JSON.stringify(m.rids.map((rid, ri) => {
      const p = 1.5 + ri * 1.7 + ((mi + v) % 5) * 0.02;
      const lv = (k: number, d: number): [number, number] => [Math.round((p + d * k * 0.02) * 100) / 100, 100 + ((v * 37 + k * 11 + ri) % 900)];
      return { rid, st: 'ACTIVE', b: [lv(0, -1), lv(1, -1), lv(2, -1)], l: [lv(1, 1), lv(2, 1), lv(3, 1)] };
    }))));
  }

  open(url: string): Promise<void> {
    this.ws = new WebSocket(url.replace(/^http/, 'ws') + '/ingest', 'odds.v1.json', { perMessageDeflate: false });
    this.ws.on('message', (data) => {
      const ack = JSON.parse(data.toString()) as { id: number; status: number; message: string };
      const batch = this.inFlight.get(ack.id);
      if (batch !== undefined) {
        this.ackLatency.recordMs(performance.now() - batch.at);
        this.inFlight.delete(ack.id);
      }
      if (ack.status === 1) {
        this.acked++;
        if (batch) for (let i = 0; i < batch.count; i++) this.accepted[(batch.start + i) % this.markets.length]++;
      } else {
        this.refused++;
        this.lastRefusal = ack.message;
      }
      this.pump?.();
    });
    this.ws.on('close', (code, reason) => {
      this.closedBecause = `closed with ${code}${reason.length ? ` (${reason.toString()})` : ''}`;
    });
    return new Promise((ok, fail) => {
      this.ws.once('open', () => ok());
      this.ws.once('error', fail);
    });
  }

  /** The newest `seq` each market must have: what the server accepted. */
  newest(): Record<string, number> {
    return Object.fromEntries(this.markets.map((m, i) => [m.mid, this.accepted[i]]));
  }

  resetStep(): void {
    this.updates.fill(0);
    this.ackLatency.reset();
  }

  get batchesInFlight(): number {
    return this.inFlight.size;
  }

  private send(count: number): void {
    const ts = performance.timeOrigin + performance.now();
    const items: string[] = new Array(count);
    const start = this.cursor;
    for (let i = 0; i < count; i++) {
      const m = this.cursor;
      this.cursor = (this.cursor + 1) % this.markets.length;
      this.updates[m]++;
      const r = this.variants[m][this.updates[m] % 8];
      items[i] = `{"kind":"odds","mid":"${this.markets[m].mid}","ts":${ts},"st":"OPEN","ip":true,"r":${r}}`;
    }
    const id = this.nextId++;
    this.inFlight.set(id, { at: performance.now(), start, count });
    this.ws.send(`{"id":${id},"data":[${items.join(',')}]}`);
  }

  /** Sends `rate` updates per second for `seconds`, one message per 5 ms tick carrying the updates due. */
  run(rate: number, seconds: number): Promise<{ sent: number; seconds: number }> {
    const total = Math.round(rate * seconds);
    const t0 = performance.now();
    let sent = 0;
    return new Promise((done) => {
      const tick = () => {
        const elapsed = (performance.now() - t0) / 1000;
        const due = Math.min(total, Math.floor(rate * elapsed)) - sent;
        if (due > 0) {
          this.send(due);
          sent += due;
        }
        if (sent >= total) {
          clearInterval(timer);
          done({ sent, seconds: (performance.now() - t0) / 1000 });
        }
      };
      const timer = setInterval(tick, 5);
    });
  }

  /**
   * The firehose: batches of `batch` updates sent without waiting for their acks, the next as soon
   * as fewer than `pipeline` are in flight, until the returned function is called.
   */
  firehose(pipeline: number, batch: number): () => void {
    this.pump = () => {
      while (this.inFlight.size < pipeline) this.send(batch);
    };
    this.pump();
    return () => {
      this.pump = undefined;
    };
  }

  async idle(timeoutMs = 15_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (this.inFlight.size > 0 && this.closedBecause === undefined && Date.now() < until) await sleep(10);
  }

  close(): void {
    this.ws.terminate();
  }
}
