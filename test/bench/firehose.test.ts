import t from 'tap';
import net from 'node:net';
import type { Writable } from 'node:stream';
import * as ws from 'ws';
import { startTestService } from '../helpers/service.js';
import { eventually } from '../helpers/wait.js';
import { fanoutMarkets, seed } from '../../bench/lib/data.js';
import { Child } from '../../bench/fanout/child.js';
import { Clients } from '../../bench/fanout/clients.js';
import { firehose } from '../../bench/fanout/firehose.js';
import { plainRequests } from '../../bench/fanout/mixed.js';
import { Publisher } from '../../bench/fanout/publisher.js';

/**
 * The fan-out benchmark's firehose step is only worth its figures if what it counts was really
 * received. Here it runs briefly against the real service, most of its counting clients and its
 * sampled sockets connected through a proxy that decodes every byte the service sends them with
 * `ws`'s own frame parser: a witness the benchmark's clients share no code with. A few more
 * counting sockets connect directly and stop reading while the window is measured, so the service
 * skips frames for them (a low WS_SLOW_BYTES, wide ladders so the backlog outgrows the kernel's
 * buffers) and the newest check covers sockets that fell behind too.
 */
const MARKETS = 10;
const PER_SOCKET = 5;
const SAMPLED = 2;
const WITNESSED = 12;
const SLOW = 6;
const RUNNERS = 60;

/** What the witness saw on one connection: odds frames, and the newest seq of each market. */
interface Seen {
  odds: number;
  last: Map<string, number>;
}

type ReceiverClass = new (options: { isServer: boolean; maxPayload: number }) => Writable;
/** `ws`'s frame parser: exported by the package, though its types leave it out. */
const Receiver = (ws as unknown as { Receiver: ReceiverClass }).Receiver;

/** A TCP proxy to `port` that parses the server-to-client stream of each connection, keyed by the client's port. */
async function witness(port: number): Promise<{ port: number; seen: Map<number, Seen>; close(): void }> {
  const seen = new Map<number, Seen>();
  const conns = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const record: Seen = { odds: 0, last: new Map() };
    seen.set(client.remotePort!, record);
    const upstream = net.connect(port, '127.0.0.1');
    conns.add(client).add(upstream);
    const receiver = new Receiver({ isServer: false, maxPayload: 0 });
    receiver.on('message', (data: Buffer) => {
      const msg = JSON.parse(data.toString()) as { op: string; mid?: string; seq?: number };
      if (msg.op !== 'odds') return;
      record.odds++;
      record.last.set(msg.mid!, msg.seq!);
    });
    let head: Buffer | undefined = Buffer.alloc(0);
    upstream.on('data', (chunk: Buffer) => {
      if (!head) return void receiver.write(chunk);
      // The handshake answer comes first; frames start after its blank line.
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const rest = head.subarray(end + 4);
      head = undefined;
      if (rest.length) receiver.write(rest);
    });
    client.pipe(upstream);
    upstream.pipe(client);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    port: (server.address() as net.AddressInfo).port, seen,
    close: () => {
      for (const c of conns) c.destroy();
      server.close();
    },
  };
}

const svc = await startTestService(t, { WS_SLOW_BYTES: '4096', WS_MAX_BACKPRESSURE: '67108864', WS_SLOW_CLOSE_MS: '120000', WS_IDLE_TIMEOUT_S: '960' });
await seed(svc.url);
const markets = fanoutMarkets(MARKETS).map((m) => ({ mid: m.mid, rids: Array.from({ length: RUNNERS }, (_, i) => i + 1) }));
const mids = markets.map((m) => m.mid);
/** Sampled sockets first, then the witnessed counting sockets, then the slow ones. */
const sets = Array.from({ length: SAMPLED + WITNESSED + SLOW }, (_, i) => Array.from({ length: PER_SOCKET }, (_, j) => mids[(i * PER_SOCKET + j) % MARKETS]));
const subscribers = Uint32Array.from(mids, (mid) => sets.filter((s) => s.includes(mid)).length);

const proxy = await witness(svc.port);
const worker = Child.start('raw-client.js', 0);
const slow = Child.start('raw-client.js', 0);
const sampler = Child.start('sampler.js', 0);
const clients = new Clients([worker, slow], sampler);
const publisher = new Publisher(markets);
t.teardown(async () => {
  publisher.close();
  await clients.close();
  proxy.close();
});

const connect = (child: Child, port: number, from: number, to: number) => child.ask<{ ok: number }>({
  type: 'connect', host: '127.0.0.1', port, path: '/ws', protocol: 'odds.v1.json', sockets: sets.slice(from, to).map(plainRequests), localAddresses: ['127.0.0.1'], concurrency: 8,
}, 'connected');
const connected = await Promise.all([
  connect(worker, proxy.port, SAMPLED, SAMPLED + WITNESSED),
  connect(slow, svc.port, SAMPLED + WITNESSED, sets.length),
  sampler.ask({ type: 'connect', url: `ws://127.0.0.1:${proxy.port}/ws`, protocol: 'odds.v1.json', sockets: sets.slice(0, SAMPLED).map(plainRequests) }, 'connected'),
]);
await eventually(() => clients.counts(), (c) => c.acks >= WITNESSED + SLOW && c.sampler.acks >= SAMPLED);
await publisher.open(svc.url);
await clients.cycle(20);
// The slow sockets stop reading (paused after their next read) until the window closes, then read every 20 ms again.
// The window closes only once one of them has fallen behind (its backlog outgrew the kernel's
// buffers and WS_SLOW_BYTES) and missed a frame, with the publisher still running: how soon depends on how busy the
// machine is: up to a minute, so the service's slow-consumer and idle bounds are set well past it.
const readEvery = (ms: number) => slow.ask({ type: 'cycle', ms }, 'cycled').then(() => undefined);
await readEvery(60_000);
// Fallen behind and then skipped: a market of a socket behind moved past what it had been sent (a
// socket that fell behind as the publishing ended would catch up with nothing skipped).
const skipping = async () => [...svc.hub.subscribers()].some((s) => s.missing > 0);
const closeWindow = async () => {
  // Their kernel buffers grew while they read every 20 ms: a slow machine's publisher takes a while to fill them.
  await eventually(skipping, Boolean, 60_000, 20);
  await readEvery(20);
};
const result = await firehose({ publisher, clients, subscribers, window: { open: async () => undefined, close: closeWindow } }, {
  warmSeconds: 0.2, seconds: 1, pipeline: 64, batch: 5, drainSeconds: 20, maxRssBytes: Infinity, cycleMs: 20,
});
type Detail = { sockets: { port: number; odds: number; last: Record<string, number> }[] };
const [witnessed, slowDetail] = await Promise.all([worker.ask<Detail>({ type: 'detail' }, 'detail'), slow.ask<Detail>({ type: 'detail' }, 'detail')]);
const skipped = Number(/^odds_frames_skipped_total (\d+)/m.exec(await (await fetch(`${svc.metricsUrl}/metrics`)).text())?.[1]);

t.same(connected.map((c) => c.ok), [WITNESSED, SLOW, SAMPLED], 'every socket connected');

t.test('every frame the firehose counted was received, and every frame received was counted', async (t) => {
  const throughProxy = [...proxy.seen.values()].reduce((a, s) => a + s.odds, 0);
  const direct = slowDetail.sockets.reduce((a, s) => a + s.odds, 0);
  t.ok(throughProxy > 0, `the firehose delivered frames through the proxy (${throughProxy})`);
  t.equal(result.deliveredTotal, throughProxy + direct, 'the firehose\'s total is what the service sent through the proxy plus what the direct sockets counted');
  for (const [i, s] of witnessed.sockets.entries()) {
    t.equal(s.odds, proxy.seen.get(s.port)?.odds, `witnessed socket ${i} counted exactly the odds frames it was sent`);
  }
});

t.test('every socket ends on the book\'s newest image of each of its markets, and the firehose says so', async (t) => {
  t.ok(skipped > 0, `the service skipped frames for the sockets that read slowly (${skipped}), so sockets that fell behind are checked too`);
  t.equal(result.newest.checked, sets.length * PER_SOCKET, 'the firehose checked every socket\'s every market');
  t.equal(result.newest.stale, 0, `the firehose found no socket on an old image${result.newest.example ? ` (${result.newest.example})` : ''}`);
  t.equal(result.newest.closedSockets, 0, 'no socket was closed');
  for (const [i, mid] of mids.entries()) t.equal(publisher.accepted[i], svc.book.get(mid)?.seq, `the publisher's count of accepted updates of ${mid} is the book's seq`);
  for (const [i, s] of witnessed.sockets.entries()) {
    for (const mid of sets[SAMPLED + i]) {
      const newest = svc.book.get(mid)!.seq;
      t.equal(s.last[mid], newest, `witnessed socket ${i} tracked the book's newest seq of ${mid}`);
      t.equal(proxy.seen.get(s.port)?.last.get(mid), newest, `witnessed socket ${i} was sent the book's newest image of ${mid} last`);
    }
  }
  for (const [i, s] of slowDetail.sockets.entries()) {
    for (const mid of sets[SAMPLED + WITNESSED + i]) t.equal(s.last[mid], svc.book.get(mid)!.seq, `slow socket ${i} tracked the book's newest seq of ${mid}`);
  }
});
