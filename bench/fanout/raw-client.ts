/**
 * Fan-out load: thousands of subscriber sockets in one process, as cheap as a client can be, so
 * the load generator is not what is measured. Plain TCP sockets speak just enough WebSocket
 * (handshake, one masked subscribe frame, pong) and count frames by reading headers only,
 * skipping payloads; every read lands in one shared buffer (net `onread`), nothing is allocated
 * per frame. To keep the number of reads down, each socket pauses after a read and all are
 * resumed every `cycleMs`: frames wait in the kernel meanwhile (a few KB), which costs the
 * server nothing (the reading side: raw-frames.ts). Latency and sequence checks are the sampler's
 * job (sampler.ts).
 *
 * Every byte read after the handshake is counted, for the bytes per delivered frame. With
 * `extensions`, the handshake offers permessage-deflate; payloads are then not inflated, and a
 * compressed data frame is counted as odds, except while a socket still awaits acks of its
 * subscribe requests: the service compresses those too, and they come before any odds frame they
 * cause, so only those first frames are inflated to be told apart.
 * A frame is counted once its last byte has been read, so a count never includes a frame still
 * on its way.
 *
 * While tracking (the firehose), each JSON odds frame's `mid` and `seq` are read from its first
 * bytes and kept per socket and market, so that the newest check can tell whether every socket
 * ended with the newest image of each of its markets.
 *
 * A child process (fork) driven over IPC: connect, counts, cycle, subscribe (more requests on the
 * connected sockets), track, newest, detail, close.
 */
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { newest } from './newest.js';
import { clientFrame, mode, newState, onRead, resumeTimes, setCycle, tally, type State } from './raw-frames.js';
import { eachLimit } from '../../src/lib/serial.js';
import { Outcomes } from './outcomes.js';

/** One subscribe request: its markets and, if asked, ladder depth and conflation interval. */
export interface Subscribe {
  mids: string[];
  /** Events to take by filter (bench:scale), and ladder deltas when the service offers them. */
  eids?: number[];
  delta?: boolean;
  since?: { epoch: string; seqs: Record<string, number> };
  depth?: number;
  conflate?: number;
}

export type { Newest } from './newest.js';

interface Connect {
  type: 'connect';
  host: string;
  port: number;
  path: string;
  protocol: string;
  /** Each socket's subscribe requests, sent once its handshake is answered. */
  sockets: Subscribe[][];
  localAddresses: string[];
  concurrency: number;
  /** Sec-WebSocket-Extensions to offer, if any. */
  extensions?: string;
  /** Per socket, the `seq` of each market it already holds (a resumed socket starts from them). */
  held?: Record<string, number>[];
  /** Each socket connects at a random moment within this many ms (a resume). */
  spreadMs?: number;
}

/** Every open socket cut at once, no close frame, and each connected again to `port` resuming with `since` in `epoch`. */
interface Resume {
  type: 'resume';
  host: string;
  port: number;
  epoch: string;
  localAddresses: string[];
  concurrency: number;
  spreadMs: number;
}

type Command = Connect | Resume | { type: 'counts' } | { type: 'cycle'; ms: number } | { type: 'subscribe'; sockets: Subscribe[][] } | { type: 'track'; on: boolean }
  | { type: 'newest'; expected: Record<string, number> } | { type: 'detail' } | { type: 'resumeTimes' } | { type: 'close' };

/** Every read of every socket lands here (net `onread`): nothing is allocated per read. */
const shared = Buffer.allocUnsafe(256 * 1024);
const sockets: State[] = [];
let nextId = 1;

/** A socket's subscribe requests as client frames, in one buffer. */
function subscribeFrames(requests: Subscribe[]): Buffer {
  return Buffer.concat(requests.map((r) => clientFrame(1, Buffer.from(JSON.stringify({ op: 'subscribe', id: nextId++, ...r })))));
}

async function connectAll(c: Connect): Promise<{ ok: number; failed: number }> {
  mode.binary = c.protocol === 'odds.v1.proto';
  const outcomes = new Outcomes();
  const one = (i: number) => new Promise<void>((done) => {
    const key = randomBytes(16).toString('base64');
    const subscribe = subscribeFrames(c.sockets[i]);
    const outcome = outcomes.socket(done);
    const timed = c.held !== undefined;
    const state = newState(undefined as unknown as net.Socket, c.sockets[i].length, [...new Set(c.sockets[i].flatMap((r) => r.mids))], c.held?.[i], (ms) => {
      outcome.settled = true;
      setTimeout(() => void one(i).then(done), ms);
    }, timed);
    const connecting = performance.now();
    if (timed) state.moments.push(connecting - resumeTimes.t0);
    const sock = net.connect({
      host: c.host, port: c.port, localAddress: c.localAddresses[i % c.localAddresses.length], noDelay: true,
      onread: {
        buffer: shared,
        // Connected once subscribed; the orchestrator then waits until every ack has arrived.
        callback: (n: number, buf: Uint8Array) => onRead(state, n, buf as Buffer, () => {
          requestsOf.set(state, c.sockets[i].map(({ since: _, ...q }) => q));
          sock.write(subscribe);
          outcome.finish(true);
        }),
      },
    } as net.NetConnectOpts);
    state.sock = sock;
    sock.on('connect', () => {
      if (timed) {
        resumeTimes.connects.push(performance.now() - connecting);
        state.moments.push(performance.now() - resumeTimes.t0);
      }
      sock.write(
        `GET ${c.path} HTTP/1.1\r\nHost: ${c.host}:${c.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ${c.protocol}\r\n` +
        (c.extensions ? `Sec-WebSocket-Extensions: ${c.extensions}\r\n` : '') + '\r\n',
      );
    });
    sock.on('error', (err) => {
      if (!outcome.settled) process.stderr.write(`raw client: ${err.message}\n`);
      outcome.finish(false);
    });
    sock.on('close', () => {
      if (!state.closed) {
        state.closed = true;
        tally.closed++;
      }
      outcome.finish(false);
    });
    setTimeout(() => outcome.finish(false), 30_000).unref();
    sockets.push(state);
  });
  // A storm's reconnects spread over `spreadMs`, each at a random moment, as clients' own jitter spreads them.
  if (c.spreadMs) await Promise.all([...c.sockets.keys()].map((i) => new Promise<void>((r) => setTimeout(r, Math.random() * c.spreadMs!)).then(() => one(i))));
  else await eachLimit(c.sockets.keys(), c.concurrency, one);
  return { ok: outcomes.ok, failed: outcomes.failed };
}

/** How late this process's event loop ran during the last resume: what its sockets' timings owe to the client itself. */
const loopDelay = monitorEventLoopDelay({ resolution: 10 });

/** The requests each live socket was opened with, kept so a resume can send them again. */
const requestsOf = new WeakMap<State, Subscribe[]>();

function resume(r: Resume): Promise<{ ok: number; failed: number }> {
  // Every socket that was accepted, whether still open or closed by the server (a restart says 1001).
  const live = sockets.filter((s) => requestsOf.has(s));
  for (const s of live) {
    s.closed = true;
    s.sock.destroy();
  }
  sockets.length = 0;
  Object.assign(resumeTimes, { t0: performance.now(), acked: [], connects: [], slowest: [] });
  loopDelay.reset();
  loopDelay.enable();
  const since = (s: State) => ({ epoch: r.epoch, seqs: Object.fromEntries(s.last) });
  return connectAll({
    type: 'connect', host: r.host, port: r.port, path: '/ws', protocol: mode.binary ? 'odds.v1.proto' : 'odds.v1.json',
    sockets: live.map((s) => (requestsOf.get(s) ?? []).map((q) => ({ ...q, since: since(s) }))),
    held: live.map((s) => Object.fromEntries(s.last)), localAddresses: r.localAddresses, concurrency: r.concurrency, spreadMs: r.spreadMs,
  });
}

process.on('message', (m: Command) => {
  switch (m.type) {
    case 'resume':
      resume(m).then((r) => process.send!({ type: 'resumed', ...r }));
      break;
    case 'resumeTimes':
      process.send!({ type: 'resumeTimes', acked: resumeTimes.acked, connects: resumeTimes.connects, slowest: resumeTimes.slowest, loopDelayMs: [loopDelay.percentile(50), loopDelay.percentile(99), loopDelay.max].map((ns) => ns / 1e6) });
      break;
    case 'connect':
      connectAll(m).then((r) => process.send!({ type: 'connected', ...r, deflating: tally.deflating }));
      break;
    case 'counts':
      process.send!({
        type: 'counts', odds: tally.odds, acks: tally.acks, other: tally.other, closed: tally.closed, reads: tally.reads, bytes: tally.bytes,
        cpu: process.cpuUsage(), refused: Object.fromEntries(tally.refused),
      });
      break;
    case 'cycle':
      setCycle(m.ms);
      process.send!({ type: 'cycled' });
      break;
    case 'subscribe':
      // Requests for markets a socket already takes replace their depth and conflation.
      for (const [i, s] of sockets.entries()) {
        if (s.closed || !m.sockets[i]) continue;
        s.pendingAcks += m.sockets[i].length;
        s.sock.write(subscribeFrames(m.sockets[i]));
      }
      process.send!({ type: 'subscribed' });
      break;
    case 'track':
      mode.tracking = m.on;
      process.send!({ type: 'tracking' });
      break;
    case 'newest':
      process.send!({ type: 'newest', ...newest(sockets, m.expected) });
      break;
    case 'detail':
      process.send!({ type: 'detail', sockets: sockets.map((s) => ({ port: s.sock.localPort, odds: s.odds, last: Object.fromEntries(s.last) })) });
      break;
    case 'close':
      setCycle(0);
      for (const s of sockets) s.sock.destroy();
      process.send!({ type: 'closed' }, () => process.exit(0));
      break;
  }
});
process.on('disconnect', () => process.exit(0));
