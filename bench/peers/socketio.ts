/**
 * The fan-out peer a Node team would pick: Socket.IO with its defaults (default parser, in-memory
 * adapter), one room per market. A client emits `subscribe` with `{ id, mids }` and gets the
 * service's ack (`{ op: 'ack', id, status, message }`) through Socket.IO's acknowledgement, then
 * the latest image of each market; every odds update is emitted once to its market's room as an
 * `odds` event carrying the service's JSON odds message (Socket.IO encodes it once per emit and
 * writes the same frame to every socket in the room). Fed like the baseline: the same `/ingest`
 * socket, validation and acks (bench/baseline/ingest.ts).
 *
 * Env: DATABASE_URL (required), PORT (0 = free port), HOST (127.0.0.1).
 */
import http from 'node:http';
import { Server, type Socket } from 'socket.io';
import { oddsMessage, type OddsImage } from '../../src/odds/image.js';
import type { OddsMessage } from '../../src/odds/messages.js';
import { MID, openPool } from '../baseline/answers.js';
import { ingestSocket, serve } from '../baseline/ingest.js';
import { newEpoch } from '../../src/odds/book.js';

/** Frames carry an epoch as the service's do, so both send the same bytes per update. */
const EPOCH = newEpoch('m');

const pool = openPool('bench-socketio');
const server = http.createServer((_req, res) => {
  res.writeHead(404).end();
});
// destroyUpgrade off: upgrades to /ingest are not Socket.IO's and must not be closed by it.
const io = new Server(server, { serveClient: false, destroyUpgrade: false });

const seqs = new Map<string, number>();
const latest = new Map<string, OddsMessage>();
let known = new Set<string>();

type Ack = (reply: { op: 'ack'; id: number; status: 0 | 1; message: string }) => void;

io.on('connection', (socket: Socket) => {
  socket.on('subscribe', (msg: { id?: unknown; mids?: unknown }, ack?: Ack) => {
    const id = typeof msg?.id === 'number' ? msg.id : 0;
    const mids = Array.isArray(msg?.mids) ? [...new Set(msg.mids as unknown[])] : [];
    const reply: Ack = typeof ack === 'function' ? ack : () => undefined;
    if (mids.length === 0 || mids.length > 50 || !mids.every((m) => typeof m === 'string' && MID.test(m))) {
      return reply({ op: 'ack', id, status: 0, message: 'bad request' });
    }
    const list = mids as string[];
    socket.join(list);
    reply({ op: 'ack', id, status: 1, message: `Subscribed from market ${list.join(',')}` });
    for (const mid of list) {
      const image = latest.get(mid);
      if (image) socket.emit('odds', image);
    }
  });
  socket.on('unsubscribe', (msg: { id?: unknown; mids?: unknown }, ack?: Ack) => {
    const id = typeof msg?.id === 'number' ? msg.id : 0;
    const mids = Array.isArray(msg?.mids) ? (msg.mids as unknown[]).filter((m): m is string => typeof m === 'string') : [];
    for (const mid of mids) socket.leave(mid);
    if (typeof ack === 'function') ack({ op: 'ack', id, status: 1, message: `Unsubscribed from market ${mids.join(',')}` });
  });
});

function publish(image: OddsImage): void {
  const mid = image.marketId;
  const seq = (seqs.get(mid) ?? 0) + 1;
  seqs.set(mid, seq);
  const msg: OddsMessage = oddsMessage(image, { epoch: EPOCH, seq, publishTime: Date.now() });
  latest.set(mid, msg);
  io.to(mid).emit('odds', msg);
}

const publishers = ingestSocket(server, () => known, publish);

serve('socketio', server, pool, (markets) => (known = markets), () => {
  for (const ws of publishers.clients) ws.terminate();
  io.disconnectSockets(true);
});
