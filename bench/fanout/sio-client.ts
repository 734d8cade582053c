/**
 * Fan-out load for the Socket.IO peer: thousands of socket.io-client sockets (WebSocket
 * transport) in one process, the counterpart of raw-client.ts. Each socket emits `subscribe` with
 * its markets and counts the acknowledgement. To keep the client as cheap as the raw one, which
 * reads frame headers only, its parser counts an `odds` event from the packet's first bytes and
 * drops it without JSON.parse; every other packet goes through Socket.IO's own decoder. The
 * transport (engine.io-client over `ws`) is Socket.IO's own. Latency and sequence checks are the
 * sampler's job (sampler.ts, with real Socket.IO clients).
 *
 * A child process (fork) driven over IPC, with raw-client.ts's commands: connect, counts, cycle
 * (answered, but reads are not paused: engine.io-client offers no way to), close.
 */
import { io, type Socket } from 'socket.io-client';
import * as parser from 'socket.io-parser';
import type { Subscribe } from './raw-client.js';
import { newest } from './newest.js';
import { eachLimit } from '../../src/lib/serial.js';
import { Outcomes } from './outcomes.js';

interface Connect {
  type: 'connect';
  host: string;
  port: number;
  /** The peer takes market IDs only: each socket's requests' `mids`. */
  sockets: Subscribe[][];
  localAddresses: string[];
  concurrency: number;
}

type Command = Connect | { type: 'counts' } | { type: 'cycle'; ms: number } | { type: 'track'; on: boolean } | { type: 'newest'; expected: Record<string, number> } | { type: 'close' };

let odds = 0;
let acks = 0;
let closed = 0;
let tracking = false;
const sockets: { socket: Socket; mids: string[]; decoder: CountingDecoder; closed: boolean }[] = [];

/** An EVENT packet on the main namespace whose event is `odds`. */
const ODDS_PREFIX = '2["odds",';
const MID_KEY = '"mid":"';
const SEQ_KEY = '"seq":';

class CountingDecoder extends parser.Decoder {
  /** While tracking: the last seq of each market this socket received. */
  readonly last = new Map<string, number>();
  override add(packet: unknown): void {
    if (typeof packet === 'string' && packet.startsWith(ODDS_PREFIX)) {
      odds++;
      if (tracking) this.track(packet);
    } else super.add(packet);
  }
  private track(packet: string): void {
    const m = packet.indexOf(MID_KEY, ODDS_PREFIX.length) + MID_KEY.length;
    const s = packet.indexOf(SEQ_KEY, m) + SEQ_KEY.length;
    this.last.set(packet.slice(m, packet.indexOf('"', m)), parseInt(packet.slice(s, s + 16), 10));
  }
}
const countingParser = { protocol: parser.protocol, PacketType: parser.PacketType, Encoder: parser.Encoder, Decoder: CountingDecoder };

async function connectAll(c: Connect): Promise<{ ok: number; failed: number }> {
  const outcomes = new Outcomes();
  const one = (i: number) => new Promise<void>((done) => {
    const socket = io(`http://${c.host}:${c.port}`, {
      transports: ['websocket'], forceNew: true, reconnection: false, timeout: 30_000, parser: countingParser,
      localAddress: c.localAddresses[i % c.localAddresses.length],
    } as Parameters<typeof io>[1]);
    const outcome = outcomes.socket(done);
    const mids = [...new Set(c.sockets[i].flatMap((r) => r.mids))];
    const entry = { socket, mids, decoder: (socket.io as unknown as { decoder: CountingDecoder }).decoder, closed: false };
    socket.on('connect', () => {
      socket.emit('subscribe', { id: 1, mids }, (ack: { status: number }) => {
        if (ack.status === 1) acks++;
      });
      outcome.finish(true);
    });
    socket.on('connect_error', (err) => {
      process.stderr.write(`socket.io client: ${err.message}\n`);
      outcome.finish(false);
    });
    socket.on('disconnect', () => {
      closed++;
      entry.closed = true;
      outcome.finish(false);
    });
    sockets.push(entry);
  });
  await eachLimit(c.sockets.keys(), c.concurrency, one);
  return { ok: outcomes.ok, failed: outcomes.failed };
}

process.on('message', (m: Command) => {
  switch (m.type) {
    case 'connect':
      connectAll(m).then((r) => process.send!({ type: 'connected', ...r, deflating: 0 }));
      break;
    case 'counts':
      process.send!({ type: 'counts', odds, acks, other: 0, closed, reads: 0, bytes: 0, cpu: process.cpuUsage() });
      break;
    case 'cycle':
      process.send!({ type: 'cycled' });
      break;
    case 'track':
      tracking = m.on;
      process.send!({ type: 'tracking' });
      break;
    case 'newest':
      process.send!({ type: 'newest', ...newest(sockets.map((x) => ({ closed: x.closed, mids: x.mids, last: x.decoder.last })), m.expected) });
      break;
    case 'close':
      for (const s of sockets) s.socket.disconnect();
      process.send!({ type: 'closed' }, () => process.exit(0));
      break;
  }
});
process.on('disconnect', () => process.exit(0));
