/**
 * A subscriber on a slow link, in a process of its own (so its pace is its own, whatever the
 * service's process is doing), for hub/age.test.ts. Not a test file itself.
 *
 *   node slow-reader.js raw|client PORT BYTES_PER_SECOND MID,MID,...
 *
 * `raw`: a WebSocket client written here over TCP, reading BYTES_PER_SECOND in 4 KiB reads and
 * answering pings as it reads them (as RFC 6455 asks), holding a market live unless a `freshness`
 * frame said otherwise. `client`: the TypeScript client, behind a relay that passes the server's
 * bytes on at BYTES_PER_SECOND, holding a market as `client.freshness` says.
 *
 * Over IPC it takes `{ fast: true }` (read at full speed from now on) and `{ report: true }`,
 * answered with what its screen held and when: for each market, each change of the image it
 * showed (seq) or of whether it showed it as live, with the time (this machine's clock, the
 * service's too).
 */
import { connect, createServer, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { OddsClient } from '../../src/client/index.js';

export interface Shown {
  at: number;
  seq: number;
  live: boolean;
  /** How old the image was (its pt) when it was shown, for a new image. */
  age?: number;
  why?: string;
}

const [mode, portText, rateText, midsText] = process.argv.slice(2);
const port = Number(portText);
let rate = Number(rateText);
const mids = midsText.split(',');
const screens = new Map<string, Shown[]>(mids.map((m) => [m, []]));
const show = (mid: string, change: Omit<Shown, 'at'>) => screens.get(mid)?.push({ at: Date.now(), ...change });
const last = (mid: string) => screens.get(mid)?.at(-1);

/** A queue of bytes let through at `rate` a second, 4 KiB at a time; everything at once when fast. */
class Pace {
  private held: Buffer[] = [];
  private timer: NodeJS.Timeout;
  constructor(private readonly from: Socket, private readonly to: (b: Buffer) => void) {
    from.on('data', (b: Buffer) => {
      this.held.push(b);
      if (rate > 0) from.pause();
    });
    this.timer = setInterval(() => this.let(rate > 0 ? Math.round(rate / 10) : Infinity), 100);
  }
  let(budget: number): void {
    while (budget > 0 && this.held.length) {
      const head = this.held[0];
      const part = head.subarray(0, Math.min(head.length, budget));
      budget -= part.length;
      if (part.length === head.length) this.held.shift();
      else this.held[0] = head.subarray(part.length);
      this.to(part);
    }
    if (!this.held.length) this.from.resume();
  }
  stop(): void {
    clearInterval(this.timer);
  }
}

function raw(): void {
  const sock = connect(port, '127.0.0.1');
  const key = randomBytes(16).toString('base64');
  sock.write(`GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: odds.v1.json\r\n\r\n`);
  let buf = Buffer.alloc(0);
  let open = false;
  const frame = (opcode: number, payload: Buffer) => {
    const head = payload.length < 126 ? Buffer.from([0x80 | opcode, 0x80 | payload.length]) : Buffer.from([0x80 | opcode, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
    sock.write(Buffer.concat([head, Buffer.alloc(4), payload]));
  };
  const read = (text: string) => {
    const msg = JSON.parse(text) as { op: string; mid?: string; seq?: number; pt?: number; live?: boolean; why?: string };
    if (!msg.mid || !screens.has(msg.mid)) return;
    const held = last(msg.mid) ?? { seq: 0, live: true };
    if (msg.op === 'odds') show(msg.mid, { seq: msg.seq!, live: held.live, age: Date.now() - msg.pt!, why: 'why' in held ? held.why : undefined });
    else if (msg.op === 'freshness') show(msg.mid, { seq: held.seq, live: msg.live!, why: msg.why });
  };
  const parse = () => {
    for (;;) {
      if (!open) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        open = true;
        buf = buf.subarray(end + 4);
        frame(1, Buffer.from(JSON.stringify({ op: 'subscribe', id: 1, mids })));
        continue;
      }
      if (buf.length < 2) return;
      const opcode = buf[0] & 0x0f;
      let len = buf[1] & 0x7f;
      let at = 2;
      if (len === 126) {
        if (buf.length < 4) return;
        len = buf.readUInt16BE(2);
        at = 4;
      } else if (len === 127) {
        if (buf.length < 10) return;
        len = Number(buf.readBigUInt64BE(2));
        at = 10;
      }
      if (buf.length < at + len) return;
      const payload = buf.subarray(at, at + len);
      buf = buf.subarray(at + len);
      if (opcode === 0x9) frame(0xa, Buffer.from(payload));
      else if (opcode === 0x1) read(payload.toString('utf8'));
    }
  };
  new Pace(sock, (b) => {
    buf = Buffer.concat([buf, b]);
    parse();
  });
}

function client(): void {
  // The relay: the client's bytes straight through, the server's at the pace.
  const relay = createServer((inbound) => {
    const outbound = connect(port, '127.0.0.1');
    inbound.pipe(outbound);
    new Pace(outbound, (b) => inbound.write(b));
    for (const s of [inbound, outbound]) s.on('error', () => undefined);
  });
  relay.listen(0, '127.0.0.1', () => {
    const { port: via } = relay.address() as { port: number };
    const c = new OddsClient({ url: `ws://127.0.0.1:${via}/ws`, WebSocket: WebSocket as never, maxAgeMs: Number(process.env.MAX_AGE_MS ?? 2000) });
    c.on('odds', (msg) => {
      const f = c.freshness(msg.mid);
      show(msg.mid, { seq: msg.seq, live: f.live, age: Date.now() - msg.pt, why: f.live ? undefined : f.why });
    });
    c.on('freshness', (f) => show(f.mid, { seq: last(f.mid)?.seq ?? 0, live: f.live, why: f.live ? undefined : f.why }));
    c.on('open', () => void c.subscribe({ mids }));
    c.connect();
  });
}

process.on('message', (m: { fast?: boolean; report?: boolean }) => {
  if (m.fast) rate = 0;
  if (m.report) process.send!({ screens: Object.fromEntries(screens) });
});
if (mode === 'raw') raw();
else client();
process.send!({ ready: true });
