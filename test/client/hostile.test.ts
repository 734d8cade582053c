/**
 * The client against a hostile server: a real `ws` server in this process feeding the real client
 * over a real socket, in both formats. Random and malformed frames never throw and never reach
 * the book or an event unchecked; within an epoch no older seq is ever emitted; frames of markets
 * the client did not ask for are ignored without growing memory; deltas that do not apply cannot
 * make it send more than its resync bounds allow.
 */
import t, { type Test } from 'tap';
import { createServer } from 'node:http';
import type { Socket } from 'node:net';
import WebSocket, { WebSocketServer, type WebSocket as ServerSocket } from 'ws';
import { OddsClient } from '../../src/client/index.js';
import { check } from '../../src/client/checks.js';
import { RESYNC } from '../../src/client/resyncs.js';
import { encodeFor, encodeProto } from '../../src/odds/codec.js';
import { decodeClient } from '../../src/odds/client-codec.js';
import { MARKET_STATUSES, type ClientMessage, type OddsMessage, type RunnerDelta, type ServerMessage } from '../../src/odds/messages.js';
import { Gen, anyValue, corruptText, cutOrExtend, nastyString, randomFields, toJson } from '../fuzz/gen.js';
import { heapAfterGc } from '../helpers/gc.js';
import { next, startClient, until } from './helpers.js';

type Format = 'json' | 'proto';
type Obj = Record<string, unknown>;

const uncaught: string[] = [];
const onUncaught = (err: Error) => uncaught.push(String(err.stack ?? err).split('\n').slice(0, 3).join(' | '));
process.on('uncaughtException', onUncaught);
t.teardown(() => void process.off('uncaughtException', onUncaught));

/**
 * The server side: it acks every request (subscribes, kept to count them, and pings) in order
 * after whatever the test sent before, so a ping the client makes resolves once the client has
 * read everything sent until then.
 */
class Hostile {
  socket: ServerSocket | undefined;
  /** The TCP socket under `socket`, corked for a burst. */
  private tcp: Socket | undefined;
  format: Format = 'json';
  readonly subscribes: ClientMessage[] = [];

  private constructor(readonly url: string) {}

  static async start(t: Test): Promise<Hostile> {
    const wss = new WebSocketServer({ noServer: true, handleProtocols: (offered) => [...offered][0] ?? false });
    const server = createServer();
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    t.teardown(() => new Promise<void>((ok) => {
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.close(() => ok());
    }));
    const h = new Hostile(`ws://127.0.0.1:${(server.address() as { port: number }).port}/ws`);
    server.on('upgrade', (req, tcp: Socket, head) => wss.handleUpgrade(req, tcp, head, (socket) => {
      h.tcp = tcp;
      wss.emit('connection', socket);
    }));
    wss.on('connection', (socket: ServerSocket) => {
      h.socket = socket;
      h.format = socket.protocol === 'odds.v1.proto' ? 'proto' : 'json';
      socket.on('message', (data: Buffer, isBinary: boolean) => {
        const m = decodeClient(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer, isBinary, 100_000);
        if ('error' in m) throw new Error(`the client sent a request the server cannot read: ${m.error}`);
        if (m.op === 'subscribe') h.subscribes.push(m);
        h.send(encodeFor(h.format, { op: 'ack', id: m.id, status: 1, message: m.op === 'ping' ? 'pong' : 'ok' }));
      });
    });
    return h;
  }

  send(data: string | Uint8Array): void {
    this.socket!.send(data, { binary: typeof data !== 'string' });
  }

  /**
   * `n` frames sent back to back, as one write: the client still reads each frame by itself, and
   * the test's CPU goes to the client rather than to a system call per frame.
   */
  burst(n: number, frame: (i: number) => string | Uint8Array): void {
    this.tcp!.cork();
    for (let i = 0; i < n; i++) this.send(frame(i));
    this.tcp!.uncork();
  }
}

const now = Date.now();
const EPOCHS = ['e1', 'e2', 'e3'];
const NAMED = Array.from({ length: 8 }, (_, i) => `n.${i}`);
const UNNAMED = Array.from({ length: 60 }, (_, i) => `u.${i}`);
const MAX_MARKETS = 30;

function oddsFrame(g: Gen, mid: string): OddsMessage {
  const r = Array.from({ length: g.int(1, 3) }, (_, k) => ({
    rid: k + 1, st: 'ACTIVE' as const,
    b: Array.from({ length: g.int(0, 3) }, (_, i): [number, number] => [2 - i * 0.01, 10 + i]),
    l: Array.from({ length: g.int(0, 3) }, (_, i): [number, number] => [2.02 + i * 0.01, 10 + i]),
  }));
  return { op: 'odds', mid, epoch: g.pick(EPOCHS), seq: g.int(1, 40), ts: now, pt: now + 1, st: g.pick(MARKET_STATUSES), ip: g.chance(0.5), con: false, cf: false, r };
}

/** A valid frame of any op the client reads, about the markets it holds, names, takes by filter, or none of them. */
function validFrame(g: Gen): ServerMessage {
  const mid = g.one([[4, () => g.pick(NAMED)], [4, () => g.pick(UNNAMED)], [1, () => `fresh.${g.int(0, 1e9)}`]]);
  return g.one<ServerMessage>([
    [30, () => oddsFrame(g, mid)],
    [30, () => {
      const from = g.int(1, 40);
      const change: RunnerDelta = { rid: g.int(1, 4), b: [[g.int(0, 3), 1.9, 5]] };
      if (g.chance(0.5)) change.l = [[0, 0, 0]];
      return { op: 'delta', mid, epoch: g.pick(EPOCHS), seq: from + g.int(1, 3), from, ts: now, pt: now + 1, st: 'OPEN', ip: true, r: [change] };
    }],
    [3, () => ({ op: 'market', mid, s: g.chance(0.5), go: g.chance(0.05), rt: false })],
    [3, () => ({ op: 'result', mid, mt: 'match-odd', res: '1', rt: false, ia: false })],
    [1, () => ({ op: 'unsubscribed', mids: [mid] })],
    [2, () => ({ op: 'feed', status: g.pick(['OK', 'STALE'] as const) })],
    [2, () => ({ op: 'hb', ts: now })],
    [2, () => ({ op: 'notice', status: 0, message: nastyString(g, 40) })],
    // Ids the client never uses (it counts from 1), or 0: an ack forging one of its own requests' ids is beyond any check.
    [2, () => ({ op: 'ack', id: g.chance(0.5) ? 0 : g.int(1e6, 2e6), status: g.pick([0, 1] as const), message: 'x' })],
  ]);
}

/** A key of the frame deleted, or given a value of any type; sometimes one nested inside a runner. */
function mutated(g: Gen, m: ServerMessage): Obj {
  const o = structuredClone(m) as unknown as Obj;
  const runners = o.r as Obj[] | undefined;
  const target = runners?.length && g.chance(0.3) ? runners[g.int(0, runners.length - 1)] : o;
  const key = g.pick([...Object.keys(target), 'op', 'seq', 'from', 'mid', 'b']);
  if (g.chance(0.3)) delete target[key];
  else target[key] = anyValue(g);
  return o;
}

/** One frame the server sends: valid, mutated, garbage text or bytes, an op of a newer server. */
function hostileFrame(g: Gen, format: Format): string | Uint8Array {
  const encode = (m: Obj): string | Uint8Array => {
    if (format === 'json') return toJson(m);
    try {
      return encodeProto(m as unknown as ServerMessage);
    } catch {
      return g.bytes(g.int(0, 40));
    }
  };
  return g.one<string | Uint8Array>([
    [40, () => encodeFor(format, validFrame(g))],
    [25, () => encode(mutated(g, validFrame(g)))],
    [8, () => corruptText(g, JSON.stringify(validFrame(g)))],
    [4, () => g.pick(['null', '[]', '"odds"', '{}', '7', '{"op":null}', '{"op":"weather","mid":"n.0"}', nastyString(g, 30)])],
    [8, () => cutOrExtend(g, encodeProto(validFrame(g)))],
    [5, () => randomFields(g, 12)],
    [5, () => g.bytes(g.int(0, 64))],
  ]);
}

/** Frames per format: the rarest shape hostileFrame makes still comes up dozens of times. */
const RANDOM = 5_000;

for (const format of ['json', 'proto'] as const) {
  t.test(`${format}: ${RANDOM.toLocaleString('en')} random and malformed frames: no throw, no older seq within an epoch, bounded book and resyncs`, async (t) => {
    const g = new Gen(20260800 + (format === 'json' ? 0 : 1));
    const srv = await Hostile.start(t);
    const { client } = hostileClient(t, srv.url, format);
    await client.subscribe({ mids: NAMED, delta: true });
    await client.subscribe({ eids: [1], delta: true });
    const initial = srv.subscribes.length;

    let errors = 0;
    const problems: string[] = [];
    client.on('error', () => errors++);
    // The highest seq emitted per market and epoch, forgotten when the client drops the market.
    const high = new Map<string, Map<string, number>>();
    let emitted = 0;
    client.on('odds', (f) => {
      emitted++;
      const seen = high.get(f.mid) ?? new Map<string, number>();
      high.set(f.mid, seen);
      const top = seen.get(f.epoch);
      if (top !== undefined && f.seq <= top) problems.push(`${f.mid} ${f.epoch}: seq ${f.seq} emitted after ${top}`);
      seen.set(f.epoch, Math.max(top ?? 0, f.seq));
      if (!('msg' in check(f))) problems.push(`odds event with a malformed frame: ${JSON.stringify(f).slice(0, 200)}`);
    });
    client.on('message', (m) => {
      if (!('msg' in check(m))) problems.push(`message event with a malformed frame: ${JSON.stringify(m).slice(0, 200)}`);
    });
    client.on('unsubscribed', (u) => u.mids.forEach((mid) => high.delete(mid)));
    client.on('market', (m) => m.go && high.delete(m.mid));

    // The two frames that used to kill a Node client.
    srv.send(JSON.stringify({ op: 'delta', mid: NAMED[0], epoch: 'e1', seq: 2, from: 1, ts: now, pt: now, st: 'OPEN', ip: true }));
    srv.send(JSON.stringify({ op: 'unsubscribed' }));
    const started = Date.now();
    srv.burst(RANDOM, () => hostileFrame(g, format));
    await client.ping();
    const seconds = (Date.now() - started) / 1000;

    t.same(uncaught, [], 'nothing thrown');
    t.same(problems, [], 'no older seq within an epoch, nothing unchecked');
    t.ok(client.connected, 'still connected, and answering: the ping above resolved');
    t.ok(errors > RANDOM / 5, `malformed frames were errors (${errors})`);
    t.ok(emitted > RANDOM / 50, `valid frames still got through (${emitted} odds events)`);
    t.ok(client.ignored > RANDOM / 100, `frames of markets not asked for were ignored (${client.ignored})`);
    t.ok(client.book.size <= NAMED.length + MAX_MARKETS, `the book holds ${client.book.size}: the named markets and at most ${MAX_MARKETS} more`);
    const resyncs = srv.subscribes.length - initial;
    t.ok(resyncs <= RESYNC.perSecond * (seconds + 1), `${resyncs} resyncs in ${seconds.toFixed(1)} s`);
  });
}

/** A client of the hostile server, taking at most MAX_MARKETS markets unnamed; the errors it is made to report are counted by each test. */
function hostileClient(t: Test, url: string, format: Format) {
  const watched = startClient(t, { url, format, maxMarkets: MAX_MARKETS });
  watched.allowErrors();
  return watched;
}

/** Sends `chunks` times 10,000 frames made by `frame`; returns how much the heap grew. */
async function heapGrowth(srv: Hostile, client: OddsClient, chunks: number, frame: (chunk: number, i: number) => string): Promise<number> {
  const before = await heapAfterGc();
  for (let chunk = 0; chunk < chunks; chunk++) {
    srv.burst(10_000, (i) => frame(chunk, i));
    // Read before more is sent, so what is measured is the client and not the server's send queue.
    await client.ping();
  }
  return (await heapAfterGc()) - before;
}

/**
 * What the heap may grow by over FOREIGN frames: 30 bytes a frame, less than any entry kept per
 * market (its ID alone takes more), and ten times the growth seen (under 0.3 MB).
 */
const FOREIGN = 100_000;
const HEAP_BOUND = 30 * FOREIGN;

t.test(`${FOREIGN.toLocaleString('en')} odds frames of markets the client never asked for: ignored, and memory does not grow`, async (t) => {
  const srv = await Hostile.start(t);
  const { client } = hostileClient(t, srv.url, 'json');
  await client.subscribe({ mids: ['n.0'] });
  const image = (mid: string) => `{"op":"odds","mid":"${mid}","epoch":"e1","seq":1,"ts":${now},"pt":${now},"st":"OPEN","ip":true,"con":false,"cf":false,"r":[{"rid":1,"st":"ACTIVE","b":[[1.9,10]],"l":[[2,10]]}]}`;
  srv.send(image('n.0'));
  await client.ping();
  const grown = await heapGrowth(srv, client, FOREIGN / 10_000, (chunk, i) => image(`u.${chunk}.${i}`));
  t.equal(client.ignored, FOREIGN, 'every one ignored');
  t.same([...client.book.mids()], ['n.0'], 'the book holds what was asked for');
  t.ok(grown < HEAP_BOUND, `the heap grew ${(grown / 1024 / 1024).toFixed(1)} MB`);
});

t.test('markets taken by a filter stop at maxMarkets: frames of further ones are ignored', async (t) => {
  const srv = await Hostile.start(t);
  const { client } = hostileClient(t, srv.url, 'proto');
  await client.subscribe({ sis: [4] });
  const g = new Gen(7);
  srv.burst(1000, (i) => encodeProto(oddsFrame(g, `s.${i}`)));
  await client.ping();
  t.equal(client.book.size, MAX_MARKETS);
  t.equal(client.ignored, 1000 - MAX_MARKETS);
});

t.test('20,000 deltas that do not apply: resyncs stay within their bounds, per market and per second', async (t) => {
  const srv = await Hostile.start(t);
  const { client } = hostileClient(t, srv.url, 'json');
  const mids = ['d.1', 'd.2', 'd.3', 'd.4', 'd.5'];
  await client.subscribe({ mids, delta: true });
  const initial = srv.subscribes.length;
  const g = new Gen(11);
  for (const mid of mids) srv.send(JSON.stringify({ ...oddsFrame(g, mid), epoch: 'e1', seq: 1 }));
  const started = Date.now();
  srv.burst(20_000, (i) => JSON.stringify({ op: 'delta', mid: mids[i % mids.length], epoch: 'e1', seq: 1001 + i, from: 1000 + i, ts: now, pt: now, st: 'OPEN', ip: true, r: [] }));
  await client.ping();
  t.ok(await until(() => srv.subscribes.length - initial >= mids.length, 5000), 'each market was asked for again');
  const seconds = (Date.now() - started) / 1000;
  const resyncs = srv.subscribes.slice(initial);
  t.ok(resyncs.length <= RESYNC.perSecond * (seconds + 1), `${resyncs.length} in ${seconds.toFixed(1)} s, not one per delta`);
  for (const mid of mids) {
    const n = resyncs.filter((s) => s.mids?.includes(mid)).length;
    t.ok(n <= Math.ceil((seconds * 1000) / RESYNC.perMarketMs) + 1, `${mid}: ${n}`);
  }
  t.same(resyncs[0].since, { epoch: 'e1', seqs: { 'd.1': 1 } }, 'saying what it holds');
  t.same(uncaught, []);
});

t.test(`${FOREIGN.toLocaleString('en')} freshness frames of markets the client never held, while it takes an event's markets: ignored, and nothing kept`, async (t) => {
  const srv = await Hostile.start(t);
  const { client } = hostileClient(t, srv.url, 'json');
  await client.subscribe({ eids: [1] });
  const stale = (mid: string) => `{"op":"freshness","mid":"${mid}","live":false,"why":"publisher","at":${now}}`;
  const grown = await heapGrowth(srv, client, FOREIGN / 10_000, (chunk, i) => stale(`f.${chunk}.${i}`));
  t.equal(client.ignored, FOREIGN, 'every one ignored');
  t.same(client.freshness('f.3.3'), { mid: 'f.3.3', live: true }, 'no state kept for a market it holds nothing of');
  t.ok(grown < HEAP_BOUND, `the heap grew ${(grown / 1024 / 1024).toFixed(1)} MB`);
  // A market it holds still has its freshness told.
  srv.send(`{"op":"odds","mid":"h.1","epoch":"e1","seq":1,"ts":${now},"pt":${now},"st":"OPEN","ip":true,"con":false,"cf":false,"r":[]}`);
  srv.send(stale('h.1'));
  await client.ping();
  t.match(client.freshness('h.1'), { live: false, why: 'publisher' });
});

/** A WebSocket that, like a browser's, takes no options: the client's own check must refuse a large frame. */
class OptionlessSocket extends WebSocket {
  constructor(url: string, protocols: string[]) {
    super(url, protocols);
  }
}

for (const [name, Socket] of [['the ws package', WebSocket], ['a socket without options (as a browser\'s)', OptionlessSocket]] as const) {
  t.test(`${name}: a frame past maxFrameBytes is not read; the connection closes saying why, and is made again`, async (t) => {
    const srv = await Hostile.start(t);
    const client = new OddsClient({ url: srv.url, WebSocket: Socket, maxFrameBytes: 64 * 1024, backoff: { minMs: 50, maxMs: 100 } });
    t.teardown(() => client.close());
    const errors: string[] = [];
    client.on('error', (e) => errors.push(e.message));
    const opened = next(client, 'open');
    client.connect();
    await opened;
    await client.subscribe({ mids: ['n.0'] });
    const closed = next(client, 'close');
    const reopened = closed.then(() => next(client, 'open'));
    srv.send(`{"op":"notice","status":0,"message":"${'x'.repeat(80 * 1024)}"}`);
    const [info] = await closed;
    // The ws package refuses the frame itself, from its header, before reading it: its close is abnormal (1006), its error says why.
    if (Socket === WebSocket) t.match(info, { code: 1006, error: 'Max payload size exceeded' }, 'refused by the socket, saying why');
    else {
      t.match(info, { code: 1009, reason: 'a frame of 81959 bytes is larger than maxFrameBytes (65536): not read' }, 'closed as too big, saying why');
      t.same(errors, [info.reason], 'and told as an error');
    }
    t.ok(info.reconnectInMs !== undefined, 'and reconnecting');
    await reopened;
    t.ok(client.connected, 'connected again');
  });
}

t.test('maxFrameBytes must be a whole number of bytes from 1024', async (t) => {
  for (const bad of [0, 1023, 1.5, Number.NaN]) {
    t.throws(() => new OddsClient({ url: 'ws://127.0.0.1:1/ws', WebSocket, maxFrameBytes: bad }), /maxFrameBytes must be a whole number of bytes from 1024/);
  }
});
