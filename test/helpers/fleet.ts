import type net from 'node:net';
import WebSocket, { type ClientOptions } from 'ws';
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

/** Opens a TCP connection from `localAddress` some other way than this process's own network (dialer.ts). */
export type Dial = (host: string, port: number, localAddress: string) => Promise<net.Socket>;

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

  /** Where members connect, from which addresses (member i from the i-th, round), and through what. */
  constructor(public url: string, n: number, readonly eid: number, public addresses: string[], public dial?: Dial) {
    this.members = Array.from({ length: n }, (_, i) => new Member(this, i));
  }

  start(): void {
    for (const m of this.members) m.connect();
  }

  /** Every member's socket open and its last subscribe acked. */
  get subscribed(): number {
    return this.members.filter((m) => m.subscribed).length;
  }

  /**
   * The clients' network goes away: each gives up its socket at once, with no close frame (on a
   * dead path not even its FIN reaches the server), and reconnects within a second over its new
   * network: to `url` from `addresses`, dialled from this process.
   */
  vanish(url: string, addresses: string[]): void {
    this.url = url;
    this.addresses = addresses;
    this.dial = undefined;
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

  constructor(private readonly fleet: Fleet, private readonly index: number) {}

  connect(): void {
    this.subscribed = false;
    const { url, addresses, dial } = this.fleet;
    const localAddress = addresses[this.index % addresses.length];
    if (!dial) return this.open(url, { localAddress });
    const { hostname, port } = new URL(url);
    dial(hostname, Number(port), localAddress).then(
      (sock) => {
        if (this.fleet.stopped) return sock.destroy();
        // Dialled over a network the fleet has since left: the member goes the new way.
        if (this.fleet.dial !== dial) return (sock.destroy(), this.connect());
        this.open(url, { createConnection: () => sock });
      },
      () => this.fleet.stopped || setTimeout(() => this.connect(), 1000),
    );
  }

  private open(url: string, how: ClientOptions): void {
    const ws = (this.ws = new WebSocket(`${url.replace(/^http/, 'ws')}/ws`, ['odds.v1.json'], { ...how, perMessageDeflate: false }));
    ws.on('unexpected-response', (req, res) => {
      // Its own socket, which destroying the request does not close when it was handed in (createConnection).
      const sock = res.socket;
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
        sock.destroy();
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
