import WebSocket from 'ws';
import type { OddsMessage } from '../../src/odds/messages.js';

/** What a client keeps of a market: enough to resume (`since`) and to compare with the server's newest image. */
export interface Held {
  epoch: string;
  seq: number;
  /** The runners as sent, to compare books exactly. */
  r: string;
}

/** The client rule docs/protocol.md states: a different epoch replaces what is held; within one, the higher seq wins. */
export function keep(book: Map<string, Held>, f: OddsMessage): void {
  const held = book.get(f.mid);
  if (!held || held.epoch !== f.epoch || f.seq > held.seq) book.set(f.mid, { epoch: f.epoch, seq: f.seq, r: JSON.stringify(f.r) });
}

/** A refused handshake as the client saw it. */
export interface Refusal {
  status: number;
  retryAfter: string | undefined;
  message: string;
}

/**
 * Many subscribers as a betting site's pages are: each keeps its book, and
 * whenever its socket goes (a close, a reset, a refusal) it connects again
 * within a second, or after `Retry-After`, and resumes with `since`. JSON, one
 * subscribe request by event.
 */
export class Fleet {
  readonly members: Member[];
  readonly refusals: Refusal[] = [];
  /** Subscribe acks with status 0 (retried like a refused handshake). */
  readonly refusedSubscribes: string[] = [];
  stopped = false;

  constructor(public url: string, n: number, readonly eid: number, readonly addresses: string[]) {
    this.members = Array.from({ length: n }, (_, i) => new Member(this, addresses[i % addresses.length]));
  }

  start(): void {
    for (const m of this.members) m.connect();
  }

  /** Every member's socket open and its last subscribe acked. */
  get subscribed(): number {
    return this.members.filter((m) => m.subscribed).length;
  }

  /** Cuts every socket at once, no close frame (as when the clients' network goes away): each reconnects. */
  vanish(): void {
    for (const m of this.members) {
      m.subscribed = false;
      m.ws?.terminate();
    }
  }

  stop(): void {
    this.stopped = true;
    for (const m of this.members) m.ws?.terminate();
  }
}

class Member {
  readonly book = new Map<string, Held>();
  ws: WebSocket | undefined;
  subscribed = false;
  private retryMs = 0;

  constructor(private readonly fleet: Fleet, private readonly localAddress: string) {}

  connect(): void {
    this.subscribed = false;
    const ws = (this.ws = new WebSocket(`${this.fleet.url.replace(/^http/, 'ws')}/ws`, ['odds.v1.json'], { localAddress: this.localAddress, perMessageDeflate: false }));
    ws.on('unexpected-response', (req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        const retryAfter = res.headers['retry-after'] as string | undefined;
        let message = body;
        try {
          message = JSON.parse(body).message;
        } catch {
          // not the service's error body: kept as it came, and the test says so
        }
        this.fleet.refusals.push({ status: res.statusCode ?? 0, retryAfter, message });
        this.retryMs = Number(retryAfter ?? 1) * 1000;
        req.destroy();
        this.again(ws);
      });
    });
    ws.on('open', () => {
      const first = this.book.values().next().value;
      const since = first ? { epoch: first.epoch, seqs: Object.fromEntries([...this.book].map(([mid, h]) => [mid, h.seq])) } : undefined;
      ws.send(JSON.stringify({ op: 'subscribe', id: 1, eids: [this.fleet.eid], ...(since ? { since } : {}) }));
    });
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString());
      if (m.op === 'odds') keep(this.book, m);
      else if (m.op === 'ack' && m.id === 1) {
        if (m.status === 1) this.subscribed = true;
        else {
          this.fleet.refusedSubscribes.push(m.message);
          this.retryMs = 1000;
          ws.terminate();
        }
      }
    });
    ws.on('error', () => undefined);
    ws.on('close', () => this.again(ws));
  }

  /** Connects again once, within a second (or after the refusal's wait, with up to a second of jitter so retries spread). */
  private again(ws: WebSocket): void {
    if (this.ws !== ws || this.fleet.stopped) return;
    this.ws = undefined;
    this.subscribed = false;
    const wait = this.retryMs + Math.random() * 1000;
    this.retryMs = 0;
    setTimeout(() => this.connect(), wait);
  }
}
