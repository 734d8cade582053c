import t from 'tap';
import WebSocket from 'ws';
import { createKey } from '../../src/auth/keys.js';
import { CLOSE } from '../../src/errors.js';
import { http, keyLive, postJson, startTestService } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';
import { Client, image } from '../helpers/ws.js';
import { FakeClock } from '../helpers/clock.js';
import type { OddsMessage } from '../../src/odds/messages.js';

const svc = await startTestService(t);
const ingest = (...items: Record<string, unknown>[]) => postJson<{ status: number; message: string }>(svc.url, '/api/v1/ingest', { data: items });
const M1 = '1.200001001';
const M2 = '1.200001002';
const M3 = '1.200011001';

t.test('JSON is the format when no subprotocol is offered; odds.v1.proto selects protobuf', async (t) => {
  const plain = await Client.connect(svc.url);
  t.equal(plain.ws.protocol, '');
  t.equal((await plain.request({ op: 'ping' })).message, 'pong');
  const proto = await Client.connect(svc.url, { format: 'proto' });
  t.equal(proto.ws.protocol, 'odds.v1.proto');
  t.equal((await proto.request({ op: 'ping' })).status, 1);
  const json = await Client.connect(svc.url, { protocols: ['chat', 'odds.v1.json'] });
  t.equal(json.ws.protocol, 'odds.v1.json');
  [plain, proto, json].forEach((c) => c.close());
});

/** A handshake offering `protocols`: the refusal's status and body, or 101 when it upgraded. */
function handshake(path: string, protocols: string[]): Promise<{ status: number; body?: unknown }> {
  const ws = new WebSocket(svc.url.replace(/^http/, 'ws') + path, protocols);
  return new Promise((ok, fail) => {
    ws.once('open', () => {
      ws.close();
      ok({ status: 101 });
    });
    ws.once('error', fail);
    ws.once('unexpected-response', (req, res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (s: string) => (text += s)).once('end', () => {
        req.destroy();
        ok({ status: res.statusCode!, body: JSON.parse(text) });
      });
    });
  });
}

for (const path of ['/ws', '/ingest']) {
  t.test(`${path}: offering only subprotocols the server does not speak is a 400 naming those it does`, async (t) => {
    t.same(await handshake(path, ['odds.v2.json']), {
      status: 400,
      body: { status: 0, message: 'Sec-WebSocket-Protocol must offer odds.v1.proto or odds.v1.json (or nothing, for JSON); got odds.v2.json' },
    });
    t.match(await handshake(path, ['odds.v2.json', 'chat']), { status: 400, body: { message: /got odds\.v2\.json, chat$/ } });
    t.same(await handshake(path, ['odds.v2.json', 'odds.v1.json']), { status: 101 }, 'one it speaks among them is chosen');
    t.same(await handshake(path, []), { status: 101 }, 'none offered stays JSON');
  });
}

t.test('subscribe is acked with the REST wording, and the current image follows the ack', async (t) => {
  await ingest(image(M1, 2.5));
  const c = await Client.connect(svc.url, { format: 'json' });
  t.teardown(() => c.close());
  const ack = await c.request({ op: 'subscribe', mids: [M1, M2, M1] });
  t.same(ack, { op: 'ack', id: ack.id, status: 1, message: `Subscribed from market ${M1},${M2}` });
  const ackAt = c.frames.indexOf(ack);
  const img = (await c.next((f) => f.op === 'odds' && f.mid === M1)) as OddsMessage;
  t.ok(c.frames.indexOf(img) > ackAt, 'image after the ack');
  t.equal(img.r[0].b[0][0], 2.5);
  t.equal(img.con, false);
});

t.test('every published update reaches the subscriber with a seq that rises by one', async (t) => {
  const c = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [M2] });
  for (let i = 0; i < 20; i++) await ingest(image(M2, 3 + i / 100));
  await c.settled();
  const seqs = c.oddsOf(M2).map((f) => f.seq);
  t.equal(seqs.length, 20);
  t.ok(seqs.every((s, i) => i === 0 || s === seqs[i - 1] + 1), `consecutive: ${seqs.join(',')}`);
});

t.test('both formats carry the same content', async (t) => {
  const j = await Client.connect(svc.url, { format: 'json' });
  const p = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => { j.close(); p.close(); });
  await j.request({ op: 'subscribe', mids: [M3] });
  await p.request({ op: 'subscribe', mids: [M3] });
  await ingest({ ...image(M3, 1.85, [1101, 1102, 9000]), st: 'SUSPENDED', ip: false });
  const a = (await j.next((f) => f.op === 'odds' && f.mid === M3 && f.st === 'SUSPENDED')) as OddsMessage;
  const b = (await p.next((f) => f.op === 'odds' && f.mid === M3 && f.st === 'SUSPENDED')) as OddsMessage;
  t.same(a, b);
  t.equal(a.ip, false);
  t.ok(a.pt >= a.ts, 'publish time after source time');
});

t.test('socket unsubscribe stops frames of that market', async (t) => {
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [M1] });
  const ack = await c.request({ op: 'unsubscribe', mids: [M1] });
  t.equal(ack.message, `Unsubscribed from market ${M1}`);
  const before = c.oddsOf(M1).length;
  await ingest(image(M1, 4));
  await c.settled();
  t.equal(c.oddsOf(M1).length, before, 'no frame after unsubscribe');
});

t.test('REST unsubscribe detaches the client\'s live sockets and tells them', async (t) => {
  const a = await Client.connect(svc.url);
  const b = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => { a.close(); b.close(); });
  await a.request({ op: 'subscribe', mids: [M1, M2] });
  await b.request({ op: 'subscribe', mids: [M1] });
  const r = await postJson(svc.url, '/api/v1/unsubscribe', { data: [M1] });
  t.equal(r.status, 200);
  t.same(await a.next((f) => f.op === 'unsubscribed'), { op: 'unsubscribed', mids: [M1] });
  t.same(await b.next((f) => f.op === 'unsubscribed'), { op: 'unsubscribed', mids: [M1] });
  const countA = a.oddsOf(M1).length;
  const countB = b.oddsOf(M1).length;
  const countA2 = a.oddsOf(M2).length;
  await ingest(image(M1, 5), image(M2, 5));
  await a.settled();
  await b.settled();
  t.equal(a.oddsOf(M1).length, countA, 'a gets no more frames of the market');
  t.equal(b.oddsOf(M1).length, countB, 'b gets no more frames of the market');
  t.equal(a.oddsOf(M2).length, countA2 + 1, 'other markets keep flowing');
});

t.test('REST subscribe attaches live sockets, and a new socket starts with the stored set', async (t) => {
  const live = await Client.connect(svc.url);
  t.teardown(() => live.close());
  await live.settled();
  await postJson(svc.url, '/api/v1/subscribe', { data: [M3] });
  t.teardown(() => postJson(svc.url, '/api/v1/unsubscribe', { data: [M3] }));
  await ingest(image(M3, 6, [1101]));
  const got = (await live.next((f) => f.op === 'odds' && f.mid === M3 && f.r[0].b[0][0] === 6)) as OddsMessage;
  t.ok(got, 'live socket attached by REST subscribe');

  const fresh = await Client.connect(svc.url);
  t.teardown(() => fresh.close());
  const img = (await fresh.next((f) => f.op === 'odds' && f.mid === M3)) as OddsMessage;
  t.equal(img.seq, got.seq, 'the stored set brings the current image on connect');
  await ingest(image(M3, 7, [1101]));
  await fresh.next((f) => f.op === 'odds' && f.mid === M3 && f.seq === got.seq + 1);
});

t.test('bad requests are answered with status 0 and the socket stays open', async (t) => {
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  const cases: [() => number | void, RegExp][] = [
    [() => c.send({ op: 'subscribe', mids: Array.from({ length: 51 }, (_, i) => `1.${i}`) }), /mids must list 1 to 50/],
    [() => c.send({ op: 'subscribe', mids: [] }), /mids must list 1 to 50/],
    [() => c.send({ op: 'subscribe', mids: ['bad id'] }), /mids\[0\] must be a market ID/],
    [() => c.sendRaw('{"op":"subscribe"'), /./],
    [() => c.sendRaw('{"op":"dance","id":9}'), /./],
    [() => c.sendRaw(Buffer.from([1, 2, 3, 255])), /./],
  ];
  for (const [act, says] of cases) {
    const from = c.frames.length;
    act();
    const ack = await c.next((f) => f.op === 'ack', 2000, from);
    t.equal(ack.op === 'ack' && ack.status, 0);
    t.match(ack.op === 'ack' && ack.message, says);
  }
  t.equal((await c.request({ op: 'ping' })).status, 1, 'still open and answering');
});

t.test('ingest refuses images of unknown markets and malformed images one by one, and publishes the others', async (t) => {
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [M2] });
  const before = c.oddsOf(M2).length;
  const unknown = await ingest(image(M2, 8), image('no.such.market'));
  t.equal(unknown.status, 200);
  t.match(unknown.body, { status: 1, message: 'Ingested 1 item; refused 1', refused: [{ i: 1, mid: 'no.such.market', message: /^item 1 \(odds no.such.market\): market no.such.market is not known/ }] });
  const malformed = await ingest(image(M2, 8.5), { ...image(M2), r: [{ rid: 1, st: 'ACTIVE', b: [[1.5]], l: [] }] });
  t.match(malformed.body, { status: 1, message: 'Ingested 1 item; refused 1', refused: [{ i: 1, mid: M2, message: /item 1 \(odds 1.200001002\): r\[0\].b\[0\] must be \[price, size\]/ }] });
  const badStatus = await ingest({ ...image(M2), st: 'PAUSED' });
  t.match(badStatus.body, { status: 1, message: 'Ingested 0 items; refused 1', refused: [{ i: 0, message: /st must be one of OPEN, SUSPENDED, BALL_RUNNING, CLOSED/ }] });
  await c.settled();
  t.same(c.oddsOf(M2).slice(before).map((f) => f.r[0].b[0][0]), [8, 8.5], 'the good images published, and nothing else');
  const badReference = await ingest(image(M2, 9), { kind: 'market', mid: M2, s: 'yes' });
  t.equal(badReference.status, 400, 'a bad reference item still refuses the whole batch');
  await c.settled();
  t.equal(c.oddsOf(M2).length, before + 2, 'and none of its images is published');
});

t.test('the /ingest socket takes batches and acks each, echoing its id', async (t) => {
  const pub = new WebSocket(svc.url.replace('http', 'ws') + '/ingest');
  await new Promise((ok) => pub.once('open', ok));
  t.teardown(() => pub.close());
  const acks: Record<string, unknown>[] = [];
  pub.on('message', (d) => acks.push(JSON.parse(String(d))));
  pub.send(JSON.stringify({ id: 7, data: [image(M1, 9)] }));
  pub.send(JSON.stringify({ id: 8, data: [image('nope.1')] }));
  pub.send('not json');
  await waitFor(() => acks.length >= 3, () => `three acks on the ingest socket, got ${JSON.stringify(acks)}`);
  // Acks carry the batch id; a batch that needs a database look-up may be answered after a later one.
  const byId = (id: number) => acks.find((a) => a.id === id)!;
  t.same(byId(7), { op: 'ack', id: 7, status: 1, message: 'Ingested 1 item' });
  t.match(byId(8), { status: 1, message: 'Ingested 0 items; refused 1', refused: [{ i: 0, mid: 'nope.1', message: /market nope.1 is not known/ }] });
  t.equal(byId(0).status, 0);
  t.match(byId(0).message, /not valid JSON/);
});

t.test('heartbeats: an hb frame after the negotiated silence; out-of-range hb is refused', async (t) => {
  // Judged by the time the server stamped on the hb (its clock is this process's), from before the
  // socket opened: how late this busy process read the socket does not move it.
  const start = Date.now();
  const c = await Client.connect(svc.url, { query: 'hb=500' });
  t.teardown(() => c.close());
  const hb = await c.next((f) => f.op === 'hb', 3000);
  t.type(hb.op === 'hb' && hb.ts, 'number');
  t.ok(hb.op === 'hb' && hb.ts - start >= 500, `not before the interval (sent ${hb.op === 'hb' && hb.ts - start} ms after the connect began)`);
  for (const bad of ['100', '30001', 'x']) {
    await t.rejects(Client.connect(svc.url, { query: `hb=${bad}` }), /upgrade refused: 400/);
  }
});

t.test('a plain HTTP request to a socket route is a 400 that says so', async (t) => {
  for (const path of ['/ws', '/ingest']) {
    const r = await http<{ status: number; message: string }>(svc.url, path);
    t.equal(r.status, 400);
    t.match(r.body.message, /takes WebSocket connections only/);
  }
});

t.test('per-socket limits: markets, message size, message rate and subscribe rate answer status 0 and keep the socket', async (t) => {
  // The service's limits on a clock this test moves: a rate refills exactly when the test says, however busy the machine.
  const clock = new FakeClock(Date.now());
  const env = { WS_MAX_MARKETS: '3', WS_MAX_MESSAGE_BYTES: '1024', WS_MESSAGES_PER_SECOND: '5', WS_SUBSCRIBES_PER_SOURCE: '2' };
  const small = await startTestService(t, env, undefined, { clock });
  const c = await Client.connect(small.url);
  t.teardown(() => c.close());
  t.equal((await c.request({ op: 'subscribe', mids: ['a.1', 'a.2'] })).status, 1);
  const over = await c.request({ op: 'subscribe', mids: ['a.2', 'a.3', 'a.4'] });
  t.equal(over.status, 0);
  t.equal(over.message, 'market a.4 did not fit: a socket holds at most 3 markets');
  const third = await c.request({ op: 'subscribe', mids: ['a.3'] });
  t.same(third, { op: 'ack', id: third.id, status: 0, message: 'subscribe rate limit: at most 2 subscribe requests per second from one address; nothing changed, retry after 1 s' });
  const un = await c.request({ op: 'unsubscribe', mids: ['a.2'] });
  t.equal(un.message, 'Unsubscribed from market a.2', 'other requests are not held back');
  const from = c.frames.length;
  c.sendRaw(JSON.stringify({ op: 'ping', id: 1, pad: 'x'.repeat(2000) }));
  const big = await c.next((f) => f.op === 'ack', 2000, from);
  t.match(big.op === 'ack' && big.message, /the limit is 1024/);
  clock.advance(1000);
  const ids = Array.from({ length: 12 }, () => c.send({ op: 'ping' }));
  const acks = await Promise.all(ids.map((id) => c.next((f) => f.op === 'ack' && f.id === id)));
  const refused = acks.filter((a) => a.op === 'ack' && a.status === 0);
  t.equal(refused.length, 7, 'a full bucket of 5, then every message refused until the clock moves');
  t.match(refused[0].op === 'ack' && refused[0].message, /rate limit: at most 5 messages per second/);
  t.notOk(await c.request({ op: 'ping' }).then((a) => a.status), 'still refused while no time passes');
  clock.advance(200);
  t.equal((await c.request({ op: 'ping' })).status, 1, 'open and answering once a fifth of a second refilled a token');
  clock.advance(1000);
  t.equal((await c.request({ op: 'subscribe', mids: ['a.3'] })).status, 1, 'and subscribing again a second later');
});

t.test('with keys: the key\'s message budget holds across its sockets, and a socket that sends on while refused is closed with 4029', async (t) => {
  // The service's buckets on a clock this test moves: nothing refills between the sends.
  const keyed = await startTestService(t, { AUTH: 'on', WS_KEY_MESSAGES_PER_SECOND: '1', WS_MESSAGES_PER_SECOND: '1' }, undefined, { clock: new FakeClock(Date.now()) });
  const { token } = await createKey(keyed.pool, 'frugal', 'subscriber');
  await keyLive(keyed.url, token);
  const a = await Client.connect(keyed.url, { query: `key=${token}` });
  const b = await Client.connect(keyed.url, { query: `key=${token}` });
  t.teardown(() => b.close());
  t.match(await a.request({ op: 'ping' }), { status: 1 });
  const refused = await b.request({ op: 'ping' });
  t.match(refused, { status: 0, message: 'rate limit: at most 1 messages per second per API key, all its sockets together' },
    'refused on a socket that had sent nothing, with its id though it was never read');
  for (let i = 0; i < 150; i++) a.send({ op: 'ping' });
  t.same(await a.closed, CLOSE.RATE);
  t.equal(a.frames.filter((f) => f.op === 'ack' && f.status === 0).length, 100, '100 refusals, then the close');
  await t.rejects(Client.connect(keyed.url, { query: `key=${token}` }), /upgrade refused: 429/, 'the key cools down: no new socket at once');
});

t.test('protobuf ingest over HTTP and over the socket', async (t) => {
  const { decodeServerProto } = await import('../../src/odds/codec.js');
  const { encodeIngestProto } = await import('../../src/odds/ingest-codec.js');
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [M1] });
  const res = await fetch(svc.url + '/api/v1/ingest', { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: Buffer.from(encodeIngestProto([image(M1, 11)])) });
  t.same(await res.json(), { status: 1, message: 'Ingested 1 item' });
  await c.next((f) => f.op === 'odds' && f.mid === M1 && f.r[0].b[0][0] === 11);
  const garbage = await fetch(svc.url + '/api/v1/ingest', { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: new Uint8Array([10, 200, 1, 2]) });
  t.equal(garbage.status, 400);

  const pub = new WebSocket(svc.url.replace('http', 'ws') + '/ingest', ['odds.v1.proto']);
  await new Promise((ok) => pub.once('open', ok));
  t.teardown(() => pub.close());
  t.equal(pub.protocol, 'odds.v1.proto');
  const ack = new Promise<unknown>((ok) => pub.once('message', (d: Buffer) => ok(decodeServerProto(new Uint8Array(d)))));
  pub.send(encodeIngestProto([image(M1, 12)]));
  t.same(await ack, { op: 'ack', id: 0, status: 1, message: 'Ingested 1 item' });
  await c.next((f) => f.op === 'odds' && f.mid === M1 && f.r[0].b[0][0] === 12);
});

t.test('a protobuf batch\'s id is echoed by its ack, refusals too: an out-of-range eid is refused as in JSON, under the batch\'s id', async (t) => {
  const { decodeServerProto } = await import('../../src/odds/codec.js');
  const { encodeIngestProto } = await import('../../src/odds/ingest-codec.js');
  const { odds: pb } = await import('../../src/odds/gen/odds.js');
  const pub = new WebSocket(svc.url.replace('http', 'ws') + '/ingest', ['odds.v1.proto']);
  await new Promise((ok) => pub.once('open', ok));
  t.teardown(() => pub.close());
  const acks: unknown[] = [];
  pub.on('message', (d: Buffer) => acks.push(decodeServerProto(new Uint8Array(d))));
  const past = '9007199254740993';
  pub.send(encodeIngestProto([{ kind: 'suspend', eid: past, sr: 'goal', ts: Date.now() }, image(M1, 13)], 21));
  pub.send(encodeIngestProto([{ kind: 'market', mid: '1.77', eid: past, na: 'Match Odds', ty: 'match-odd' }], 22));
  pub.send(pb.v1.IngestBatch.encode({ id: 23, data: [{ market: { mid: '1.77', if_json: '{nope' } }] }).finish());
  pub.send(encodeIngestProto([], 24));
  await waitFor(() => acks.length >= 4, () => `four acks, got ${JSON.stringify(acks)}`);
  t.match(acks, [
    { op: 'ack', id: 21, status: 1, message: 'Ingested 1 item; refused 1', refused: [{ i: 0, mid: '', message: /^item 0 \(suspend \d+\): eid must be a positive integer event ID$/ }] },
    { op: 'ack', id: 22, status: 0, code: 'ITEM_REJECTED', message: /^item 0 \(market 1\.77\): eid must be a positive integer$/ },
    { op: 'ack', id: 23, status: 0, code: 'BAD_BODY', message: 'request body data[0]: if_json is not valid JSON' },
    { op: 'ack', id: 24, status: 1, message: 'Ingested 0 items' },
  ], 'the suspend refused alone and the image beside it taken; the market refusing its batch; an unreadable item; a heartbeat');
});

t.test('since.seqs may hold no more markets than the request names, and is counted before it is read', async (t) => {
  const seqs = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`1.${100000 + i}`, i]));
  for (const format of ['json', 'proto'] as const) {
    const c = await Client.connect(svc.url, { format });
    t.teardown(() => c.close());
    const over = await c.request({ op: 'subscribe', mids: [M1, M2], since: { epoch: 'x', seqs: seqs(3) } });
    t.same([over.status, over.message], [0, `since.seqs holds ${format === 'json' ? 'more than 2' : '3'} markets; it may hold at most 2, the 2 markets this request names in mids`], format);
    const big = await c.request({ op: 'subscribe', mids: [M1], since: { epoch: 'x', seqs: seqs(3000) } });
    t.match(big.message, /since\.seqs holds (more than 1|3000) markets; it may hold at most 1/, `${format}: a 3000-entry map refused by its count`);
    const filtered = await c.request({ op: 'subscribe', eids: [1], since: { epoch: 'x', seqs: seqs(2001) } });
    t.match(filtered.message, /it may hold at most 2000, the markets a socket may hold \(2000\)/, `${format}: with filters, the socket's market limit`);
    t.equal((await c.request({ op: 'subscribe', mids: [M1, M2], since: { epoch: 'x', seqs: seqs(2) } })).status, 1, `${format}: within the bound it is taken`);
  }
});
