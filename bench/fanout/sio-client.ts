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

interface Connect {
  type: 'connect';
  host: string;
  port: number;
  sockets: string[][];
  localAddresses: string[];
  concurrency: number;
}

type Command = Connect | { type: 'counts' } | { type: 'cycle'; ms: number } | { type: 'close' };

let odds = 0;
let acks = 0;
let closed = 0;
const sockets: Socket[] = [];

/** An EVENT packet on the main namespace whose event is `odds`. */
const ODDS_PREFIX = '2["odds",';

class CountingDecoder extends parser.Decoder {
  override add(packet: unknown): void {
    if (typeof packet === 'string' && packet.startsWith(ODDS_PREFIX)) odds++;
    else super.add(packet);
  }
}
const countingParser = { protocol: parser.protocol, PacketType: parser.PacketType, Encoder: parser.Encoder, Decoder: CountingDecoder };

async function connectAll(c: Connect): Promise<{ ok: number; failed: number }> {
  let ok = 0;
  let failed = 0;
  let next = 0;
  const one = (i: number) => new Promise<void>((done) => {
    const socket = io(`http://${c.host}:${c.port}`, {
      transports: ['websocket'], forceNew: true, reconnection: false, timeout: 30_000, parser: countingParser,
      localAddress: c.localAddresses[i % c.localAddresses.length],
    } as Parameters<typeof io>[1]);
    let settled = false;
    const finish = (good: boolean) => {
      if (settled) return;
      settled = true;
      if (good) ok++;
      else failed++;
      done();
    };
    socket.on('connect', () => {
      socket.emit('subscribe', { id: 1, mids: c.sockets[i] }, (ack: { status: number }) => {
        if (ack.status === 1) acks++;
      });
      finish(true);
    });
    socket.on('connect_error', (err) => {
      process.stderr.write(`socket.io client: ${err.message}\n`);
      finish(false);
    });
    socket.on('disconnect', () => {
      closed++;
      finish(false);
    });
    sockets.push(socket);
  });
  const lanes = Array.from({ length: Math.min(c.concurrency, c.sockets.length) }, async () => {
    while (next < c.sockets.length) await one(next++);
  });
  await Promise.all(lanes);
  return { ok, failed };
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
    case 'close':
      for (const s of sockets) s.disconnect();
      process.send!({ type: 'closed' }, () => process.exit(0));
      break;
  }
});
process.on('disconnect', () => process.exit(0));
