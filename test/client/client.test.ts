/**
 * The odds client (src/client) against the real service over real sockets,
 * in both formats: its book, its requests, resume after a dropped
 * connection, a restart of the service, eviction of concluded markets, and
 * its book on deltas (applied to the image held; a delta for an image it
 * does not hold dropped and the market asked for again with `since`).
 */
import t from 'tap';
import { http, postJson, startTestService } from '../helpers/service.js';
import { Client, imageFor, withTraded } from '../helpers/ws.js';
import { MovingMarket } from '../helpers/moving.js';
import type { MarketType } from '../../src/refdata/types.js';
import { RefusedError } from '../../src/client/index.js';
import type { AckMessage, OddsMessage } from '../../src/odds/messages.js';
import type { Service } from '../../src/service.js';
import { next, relay, startClient, until, wsUrl } from './helpers.js';

const FORMATS = ['json', 'proto'] as const;
const EVENT = 30000001;
const svc = await startTestService(t);
const ingest = async (base: string, ...data: Record<string, unknown>[]) => {
  const r = await postJson(base, '/api/v1/ingest', { data });
  if (r.status !== 200) throw new Error(`ingest refused: ${r.text}`);
};
/** The server's newest image of a market, as a frame. */
const serverImage = (s: Service, mid: string): OddsMessage | undefined => s.book.get(mid)?.message();

/** Live markets of the event with runners, three for each format's book tests and three for its eviction test, so no test sees another's changes. */
const markets = await http<{ data: Record<string, { mid: string; go: boolean; ty: MarketType }[]> }>(svc.url, `/api/v1/events/markets?eid=${EVENT}`);
const LIVE = markets.body.data[EVENT].filter((m) => !m.go && m.ty !== 'player-race').map((m) => m.mid);
const TYPES = new Map(markets.body.data[EVENT].map((m) => [m.mid, m.ty]));
/** An image each market can have: lines for the line markets among them. */
const image = (mid: string, price = 2) => imageFor(TYPES.get(mid)!, mid, price);
const traded = (mid: string, price: number) => withTraded(image(mid, price));
const marketsFor = (format: (typeof FORMATS)[number], offset = 0) => LIVE.slice((format === 'json' ? 0 : 3) + offset, (format === 'json' ? 3 : 6) + offset);

for (const format of FORMATS) {
  t.test(`${format}: subscribe resolves with the ack; a refused request rejects with the server's message and is not kept`, async (t) => {
    const { client } = startClient(t, { url: wsUrl(svc.url), format, hb: 1000 });
    const ack = await client.subscribe({ mids: ['1.200001001'] });
    t.match(ack, { op: 'ack', status: 1, message: 'Subscribed from market 1.200001001' });
    const tooMany = Array.from({ length: 51 }, (_, i) => `x.${i}`);
    const refused = await client.subscribe({ mids: tooMany }).then(() => undefined, (err: unknown) => err);
    t.ok(refused instanceof RefusedError, 'a RefusedError');
    t.equal((refused as RefusedError).message, 'mids must list 1 to 50 market IDs, got 51');
    await t.rejects(client.subscribe({ eids: [EVENT], depth: 11 }), /depth must be a whole number from 1 to 10/);
    t.same(client.subscriptions.map((s) => s.mids ?? s.eids), [['1.200001001']], 'only the accepted subscribe is kept');
    t.match(await client.unsubscribe({ mids: ['1.200001001'] }), { status: 1, message: 'Unsubscribed from market 1.200001001' });
    t.same(client.subscriptions, [], 'an unsubscribe forgets it');
  });

  t.test(`${format}: builds the same book as a raw socket, and as the server's`, async (t) => {
    const mids = marketsFor(format);
    const raw = await Client.connect(svc.url, { format });
    t.teardown(() => raw.close());
    await raw.request({ op: 'subscribe', mids });
    const { client } = startClient(t, { url: wsUrl(svc.url), format });
    await client.subscribe({ mids });
    // The last round says what traded too, so the books must carry ltp and tv through.
    for (let round = 0; round < 5; round++) await ingest(svc.url, ...mids.map((mid, i) => (round < 4 ? image : traded)(mid, 2 + round / 10 + i)));
    await Promise.all([raw.settled(), client.ping()]);
    const rawBook = new Map<string, OddsMessage>();
    for (const f of raw.frames) {
      if (f.op !== 'odds') continue;
      const held = rawBook.get(f.mid);
      if (!held || held.epoch !== f.epoch || f.seq > held.seq) rawBook.set(f.mid, f);
    }
    for (const mid of mids) {
      t.same(client.book.get(mid), rawBook.get(mid), `${mid}: the raw socket's newest frame`);
      t.same(client.book.get(mid), serverImage(svc, mid), `${mid}: the server's image`);
    }
    t.ok(mids.every((mid) => client.book.get(mid)!.tv !== undefined && client.book.get(mid)!.r.every((r) => r.ltp !== undefined && r.tv !== undefined)), 'ltp and tv kept');
  });

  t.test(`${format}: an event filter with depth, through the client`, async (t) => {
    const { client } = startClient(t, { url: wsUrl(svc.url), format });
    const ack = await client.subscribe({ eids: [EVENT], depth: 1 });
    t.match(ack.message, new RegExp(`^Subscribed from event ${EVENT} \\(\\d+ markets\\)$`));
    const mid = marketsFor(format)[0];
    const seq = (serverImage(svc, mid)?.seq ?? 0) + 1;
    const seen = next(client, 'odds', (f) => f.mid === mid && f.seq === seq);
    await ingest(svc.url, image(mid, 4));
    const [frame] = await seen;
    t.ok(frame.r.every((r) => r.b.length === 1 && r.l.length === 1), 'one ladder level a side');
  });

  t.test(`${format}: resumes after a dropped connection without sending unchanged markets again`, async (t) => {
    const mids = marketsFor(format);
    const [moving, ...still] = mids;
    await ingest(svc.url, ...mids.map((mid) => image(mid, 5)));
    const net = await relay(t, svc.port);
    const { client, frames } = startClient(t, { url: wsUrl(net.url), format });
    await client.subscribe({ mids });
    await client.ping();
    t.ok(mids.every((mid) => client.book.has(mid)), 'the book holds every market');
    const before = frames.length;

    const reopened = next(client, 'open');
    const closed = next(client, 'close');
    net.down();
    const [info] = await closed;
    t.equal(info.code, 1006, 'a dropped connection');
    t.ok(info.reconnectInMs !== undefined, 'the client will reconnect');
    await ingest(svc.url, image(moving, 6));
    net.up();
    await reopened;
    const resumedAck = (await next(client, 'message', (m) => m.op === 'ack'))[0] as AckMessage;
    await client.ping();

    t.equal(resumedAck.current, still.length, 'the ack counts the markets that were current');
    const after = frames.slice(before).filter((f): f is OddsMessage => f.op === 'odds');
    t.same(after.map((f) => f.mid), [moving], 'only the market that moved was sent again');
    for (const mid of mids) t.same(client.book.get(mid), serverImage(svc, mid), `${mid} equals the server's`);
    t.equal(net.connections, 2, 'one reconnect');
  });

  t.test(`${format}: keeps each market's freshness: the server's word, stale while disconnected, live once resubscribed unless told otherwise`, async (t) => {
    const [late, plain] = marketsFor(format, 9);
    await ingest(svc.url, image(late), image(plain));
    const net = await relay(t, svc.port);
    const { client } = startClient(t, { url: wsUrl(net.url), format });
    const told: string[] = [];
    client.on('freshness', (s) => told.push(s.live ? `${s.mid} live` : `${s.mid} ${s.why}`));
    await client.subscribe({ mids: [late, plain] });
    await ingest(svc.url, { kind: 'stale', mid: late, why: 'late' });
    await next(client, 'freshness', (s) => s.mid === late);
    t.match(client.freshness(late), { mid: late, live: false, why: 'late', since: Number });
    t.same(client.freshness(plain), { mid: plain, live: true });

    const reopened = next(client, 'open');
    net.down();
    t.ok(await until(() => !client.freshness(plain).live), 'without a connection');
    t.match([client.freshness(plain), client.freshness(late)], [{ live: false, why: 'disconnected' }, { live: false, why: 'disconnected' }], 'every market is stale, the client\'s own reason');
    net.up();
    await reopened;
    await client.ping();
    t.same(client.freshness(plain), { mid: plain, live: true }, 'live again once resubscribed');
    t.match(client.freshness(late), { live: false, why: 'late' }, 'and stale where the server says so, though its image was current');
    t.same(told.slice(-3), [`${late} live`, `${plain} live`, `${late} late`], 'each change an event, in order');
  });

  t.test(`${format}: evicts a market that concluded, and one the server detached`, async (t) => {
    const [concluding, detached, kept] = marketsFor(format, 6);
    await ingest(svc.url, image(concluding), image(detached), image(kept));
    const { client } = startClient(t, { url: wsUrl(svc.url), format, storedSet: true });
    const { client: plain } = startClient(t, { url: wsUrl(svc.url), format });
    await client.subscribe({ mids: [concluding, kept] });
    await plain.subscribe({ mids: [kept] });
    t.equal((await postJson(svc.url, '/api/v1/subscribe', { data: [detached] })).status, 200, 'the stored set takes one more');
    t.ok(await until(() => client.book.has(detached)), 'the stored set reaches the live socket');
    // Sent to both sockets at once: once the ping is answered, the other client has read it too.
    await plain.ping();
    t.notOk(plain.book.has(detached), 'a client that does not take its stored set ignores it');
    t.ok(plain.ignored > 0);
    t.ok(client.book.has(concluding));

    const ended = next(client, 'unsubscribed', (m) => m.mids.includes(concluding));
    const state = next(client, 'market', (m) => m.mid === concluding && m.go);
    await ingest(svc.url, { kind: 'market', mid: concluding, go: true });
    await state;
    t.notOk(client.book.has(concluding), 'gone from the book on its final market frame');
    await ended;
    t.same(client.subscriptions.map((s) => s.mids), [[kept]], 'and no longer asked for');

    const gone = next(client, 'unsubscribed', (m) => m.mids.includes(detached));
    await postJson(svc.url, '/api/v1/unsubscribe', { data: [detached] });
    await gone;
    t.notOk(client.book.has(detached), 'a market the server detached leaves the book');
    t.ok(client.book.has(kept), 'the others stay');
  });

  t.test(`${format}: survives a restart of the service and ends on the new epoch with the server's book`, async (t) => {
    // The restarted process listens on another port behind the same address, as a replaced pod does behind its
    // Service: the old port cannot be bound again at once (the server closed its sockets first, so they sit in TIME_WAIT).
    const first = await startTestService(t);
    const net = await relay(t, first.port);
    const mids = ['1.200001001', '1.200001002'];
    await ingest(first.url, ...mids.map((mid) => image(mid, 2)));
    const { client } = startClient(t, { url: wsUrl(net.url), format });
    await client.subscribe({ mids });
    await client.ping();
    const oldEpoch = client.book.get(mids[0])!.epoch;

    const closed = next(client, 'close');
    const reopened = next(client, 'open');
    await first.close();
    t.equal((await closed)[0].code, 1001, 'told the server is going away');
    const second = await startTestService(t, {}, first.databaseUrl);
    t.teardown(() => second.close());
    await ingest(second.url, image(mids[0], 3));
    net.retarget(second.port);
    await reopened;
    await client.ping();
    await ingest(second.url, image(mids[1], 4));
    await client.ping();
    for (const mid of mids) {
      const frame = client.book.get(mid);
      t.not(frame?.epoch, oldEpoch, `${mid} is on the new epoch`);
      t.same(frame, serverImage(second, mid), `${mid} equals the restarted server's`);
    }
    await second.close();
  });
}

t.test('a notice from the server is the client\'s notice event, in both formats, and settles no request', async (t) => {
  const small = await startTestService(t, { WS_MAX_MARKETS: '1' });
  for (const format of FORMATS) {
    const { client } = startClient(t, { url: wsUrl(small.url), format, hb: 1000 });
    t.equal((await client.subscribe({ mids: [LIVE[0]] })).status, 1);
    const told = next(client, 'notice');
    t.equal((await postJson(small.url, '/api/v1/subscribe', { data: [LIVE[1]] })).status, 200);
    t.same(await told, [{ op: 'notice', status: 0, message: `market ${LIVE[1]} did not fit: a socket holds at most 1 markets` }], format);
    t.same(client.subscriptions.map((s) => s.mids), [[LIVE[0]]], `${format}: what it asked for is unchanged`);
    await postJson(small.url, '/api/v1/unsubscribe', { data: [LIVE[1]] });
  }
});

/** The delta book: each test streams a market of its own (1.31000000N). */
const body = (m: OddsMessage | undefined) => m && { mid: m.mid, epoch: m.epoch, seq: m.seq, ts: m.ts, st: m.st, ip: m.ip, r: m.r, tv: m.tv };

let n = 0;
for (const format of FORMATS) {
  t.test(`${format}: a delta subscriber's book follows a long stream and ends equal to the server's`, async (t) => {
    const market = new MovingMarket(`1.31000000${++n}`, 12, n);
    await ingest(svc.url, market.market(), market.next(false));
    const { client, frames } = startClient(t, { url: wsUrl(svc.url), format });
    let events = 0;
    client.on('odds', () => events++);
    await client.subscribe({ mids: [market.mid], delta: true });
    for (let i = 0; i < 20; i++) await ingest(svc.url, ...Array.from({ length: 10 }, () => market.next()));
    t.ok(await until(() => client.book.get(market.mid)?.seq === serverImage(svc, market.mid)!.seq), 'it reaches the newest seq');
    t.strictSame(body(client.book.get(market.mid)), body(serverImage(svc, market.mid)), 'its book equals the server\'s image');
    const deltas = frames.filter((f) => f.op === 'delta').length;
    t.ok(deltas > 150, `most frames were deltas (${deltas})`);
    t.equal(events, frames.filter((f) => f.op === 'odds' || f.op === 'delta').length, 'every image and delta was emitted as an odds event');
  });

  t.test(`${format}: a delta whose from is not held is dropped and the market asked for again with since, ending equal`, async (t) => {
    const market = new MovingMarket(`1.31000000${++n}`, 12, n);
    await ingest(svc.url, market.market(), market.next(false));
    const { client, frames } = startClient(t, { url: wsUrl(svc.url), format });
    await client.subscribe({ mids: [market.mid], delta: true });
    await ingest(svc.url, market.next(false));
    t.ok(await until(() => client.book.get(market.mid)?.seq === 2), 'the first delta applied');
    // The client missed a frame: it holds seq 1 while the server's next delta is from 2.
    const first = frames.find((f): f is OddsMessage => f.op === 'odds' && f.seq === 1)!;
    client.book.delete(market.mid);
    client.book.apply(first);
    const asked = next(client, 'message', (m) => m.op === 'ack' && m.current !== undefined);
    await ingest(svc.url, market.next(false));
    const [ack] = (await asked) as [AckMessage];
    t.equal(ack.current, 0, 'it subscribed again saying what it held (since), which was not current');
    t.ok(await until(() => client.book.get(market.mid)?.seq === 3), 'it reaches the newest seq');
    t.strictSame(body(client.book.get(market.mid)), body(serverImage(svc, market.mid)), 'its book equals the server\'s image');
    const at = frames.findIndex((f) => f.op === 'delta' && f.seq === 3);
    t.equal(at >= 0 && frames[at].op === 'delta' && frames[at].from, 2, 'the delta from 2 arrived');
    t.ok(frames.slice(at + 1).some((f) => f.op === 'odds' && f.seq === 3), 'and then the image of seq 3');
    await ingest(svc.url, market.next(false));
    t.ok(await until(() => client.book.get(market.mid)?.seq === 4), 'deltas apply again after it');
    t.strictSame(body(client.book.get(market.mid)), body(serverImage(svc, market.mid)));
  });
}
