/**
 * Fuzz of the odds socket `/ws` in both subprotocols: JSON with wrong types in every field,
 * protobuf cut, extended and with wrong wire types, random bytes, huge `mids` lists, unicode and
 * control characters in IDs, messages over the size limits, and the upgrade's `hb` parameter.
 * Every refused message must get `{"op":"ack","status":0,...}` and leave the socket usable (a
 * ping after each round is answered with status 1). The per-socket rate limit is raised so it
 * does not mask decoding. Seeded from SEED (FUZZ_SEED=n to explore).
 *
 * Sizes (docs/limits.md: 64 KiB limit, uWS closes above 4x that): a message of 64 KiB + 1 to 256 KiB gets
 * an ack with status 0 and id 0; above 256 KiB uWS drops the connection, which the client sees
 * as 1006 (no close frame arrives), as docs/limits.md says. A text frame that is not UTF-8 is
 * failed by uWS as RFC 6455 requires (1006/1007). Both close only that socket.
 */
import t from 'tap';
import { encodeClientProto } from '../../src/odds/client-codec.js';
import type { ClientMessage } from '../../src/odds/messages.js';
import { startTestService } from '../helpers/service.js';
import {
  Gen, ackIdOf, clientBinary, clientJson, clientMessageValid, clientPb, decodeClientStrict, encodeComponent, goodMid, hbOracle,
  nastyString, parsed, percentGarbage, type Expect,
} from './gen.js';
import {
  Failures, Sock, afterwards, baseline, decodeFrame, inPool, nextAnswer, notAnError, notARefusal, rawHttp, show, take, type Baseline,
} from './harness.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20260701) + 200;
const KIB = 1024;
const LIMIT = 64 * KIB;
const HARD_LIMIT = 4 * LIMIT;
const ROUND = 25;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

const svc = await startTestService(t, { WS_MESSAGES_PER_SECOND: '100000' });
let before: Baseline;

t.before(async () => {
  before = await baseline(t, svc);
});

interface Msg {
  data: Buffer;
  binary: boolean;
  /** The id the ack must carry, when the generator can tell. */
  id: number | undefined;
}

/** What the server will make of a frame: undefined when it might be a valid request (not sent). */
function classify(data: Buffer, binary: boolean): Msg | undefined {
  if (data.length > HARD_LIMIT) return undefined;
  if (data.length > LIMIT) return { data, binary, id: 0 };
  if (!binary) {
    // RFC 8259 lets a parser ignore a leading byte order mark, or refuse it: either answer is right.
    const bom = data.subarray(0, 3).equals(BOM);
    const p = parsed(bom ? data.subarray(3) : data);
    if (p && clientMessageValid(p.value)) return undefined;
    return { data, binary, id: bom ? undefined : p ? ackIdOf(p.value) : 0 };
  }
  const m = decodeClientStrict(data);
  if (m && clientMessageValid(m)) return undefined;
  return { data, binary, id: m?.id };
}

const ping = async (sock: Sock, id: number, proto: boolean): Promise<string | undefined> => {
  const msg: ClientMessage = { op: 'ping', id };
  sock.send(proto ? Buffer.from(encodeClientProto(msg)) : JSON.stringify(msg), proto);
  const f = await nextAnswer(sock);
  if (!f) return `ping ${id} not answered${sock.closed ? ` (closed ${sock.closed.code})` : ''}`;
  const m = decodeFrame(f);
  if (typeof m === 'string') return m;
  return m.op === 'ack' && m.id === id && m.status === 1 && m.message === 'pong' ? undefined : `ping ${id} answered ${JSON.stringify(m)}`;
};

/**
 * Rounds of ROUND messages sent back to back, then read back in order (acks on one socket keep
 * the order of the requests), then a ping that must be answered with status 1.
 */
async function fuzzSocket(sock: Sock, proto: boolean, rounds: number, make: () => Msg, f: Failures, pings: Failures): Promise<number> {
  let sent = 0;
  for (let r = 0; r < rounds && !sock.closed; r++) {
    const batch = Array.from({ length: ROUND }, make);
    for (const m of batch) sock.send(m.data, m.binary);
    for (const m of batch) {
      const ack = await nextAnswer(sock);
      f.add(`${m.binary ? 'binary ' + m.data.toString('hex') : 'text ' + show(m.data.toString('utf8'))}`, notARefusal(ack, m.id, proto));
    }
    sent += batch.length;
    pings.add(`ping after round ${r}`, await ping(sock, 1_000_000 + r, proto));
  }
  return sent;
}

const regenerate = (gen: () => { data: Buffer; binary: boolean }) => () => {
  for (;;) {
    const { data, binary } = gen();
    const m = classify(data, binary);
    if (m) return m;
  }
};

t.test(`/ws odds.v1.json: generated requests get status 0 acks, the socket stays usable (seed ${SEED})`, async (t) => {
  const g = new Gen(SEED);
  const f = new Failures();
  const pings = new Failures();
  const offers = [['odds.v1.json'], [], ['x-unknown', 'odds.v1.json'], ['odds.v1.json']];
  const socks = await Promise.all(offers.map((p) => Sock.open(svc.url, '/ws', p)));
  t.teardown(() => socks.forEach((s) => s.close()));
  // Text frames mostly; binary frames on a JSON socket are read as protobuf, and answered in JSON.
  const make = regenerate(() => (g.chance(0.85) ? { data: clientJson(g), binary: false } : { data: clientBinary(g), binary: true }));
  let sent = 0;
  for (const sock of socks) sent += await fuzzSocket(sock, false, 8, make, f, pings);
  t.ok(sent >= 800, `${sent} messages on ${socks.length} sockets`);
  f.assert(t, 'JSON socket acks');
  pings.assert(t, 'pings after each round');
  t.same(socks.map((s) => s.closed), socks.map(() => undefined), 'no socket was closed');
});

t.test(`/ws odds.v1.proto: generated frames get status 0 acks, the socket stays usable (seed ${SEED + 1})`, async (t) => {
  const g = new Gen(SEED + 1);
  const f = new Failures();
  const pings = new Failures();
  const socks = await Promise.all([['odds.v1.proto'], ['odds.v1.proto', 'odds.v1.json'], ['odds.v1.proto']].map((p) => Sock.open(svc.url, '/ws', p)));
  t.teardown(() => socks.forEach((s) => s.close()));
  t.same(socks.map((s) => s.ws.protocol), ['odds.v1.proto', 'odds.v1.proto', 'odds.v1.proto']);
  // The hand-written encoder is the codec's, byte for byte, on a valid message.
  const sample: ClientMessage = { op: 'subscribe', id: 77, mids: ['1.1', '1.2'] };
  t.same(clientPb('subscribe', 77, ['1.1', '1.2']), Buffer.from(encodeClientProto(sample)), 'clientPb matches encodeClientProto');
  const make = regenerate(() => (g.chance(0.85) ? { data: clientBinary(g), binary: true } : { data: clientJson(g), binary: false }));
  let sent = 0;
  for (const sock of socks) sent += await fuzzSocket(sock, true, 7, make, f, pings);
  t.ok(sent >= 525, `${sent} messages on ${socks.length} sockets`);
  f.assert(t, 'protobuf socket acks');
  pings.assert(t, 'pings after each round');
  t.same(socks.map((s) => s.closed), socks.map(() => undefined), 'no socket was closed');
});

t.test(`/ws: valid protobuf cut short or extended from encodeClientProto (seed ${SEED + 2})`, async (t) => {
  const g = new Gen(SEED + 2);
  const f = new Failures();
  const pings = new Failures();
  const sock = await Sock.open(svc.url, '/ws', ['odds.v1.proto']);
  t.teardown(() => sock.close());
  let accidental = 0;
  const make = () => {
    for (;;) {
      // Real requests, one bad ID first so no cut of the mids list is a valid request.
      const msg = { op: g.pick(['subscribe', 'unsubscribe']), id: g.int(0, 2 ** 32 - 1), mids: [g.pick(['bad id', '', 'é', 'x'.repeat(65), '1.1\u0000']), ...Array.from({ length: g.int(0, 60) }, () => goodMid(g))] } as ClientMessage;
      const bytes = Buffer.from(encodeClientProto(msg));
      const cut = g.chance(0.7) ? bytes.subarray(0, g.int(0, bytes.length - 1)) : Buffer.concat([bytes, g.bytes(g.int(1, 100))]);
      const m = classify(cut, true);
      if (m) return m;
      accidental++;
    }
  };
  await fuzzSocket(sock, true, 6, make, f, pings);
  t.comment(`${accidental} cuts that still decoded to a valid request were not sent`);
  f.assert(t, 'cut and extended protobuf');
  pings.assert(t, 'pings after each round');
});

t.test('/ws: messages over the size limits, in both subprotocols', async (t) => {
  for (const format of ['json', 'proto'] as const) {
    const proto = format === 'proto';
    const sock = await Sock.open(svc.url, '/ws', [`odds.v1.${format}`]);
    // Just over the documented limit, and just under uWS's hard limit: refused with an ack, id 0.
    for (const size of [LIMIT + 1, 100 * KIB, HARD_LIMIT]) {
      const mids = Array.from({ length: Math.ceil(size / 12) }, (_, i) => `1.${200000000 + i}`);
      let data: Buffer = proto ? clientPb('subscribe', 5, mids) : Buffer.from(JSON.stringify({ op: 'subscribe', id: 5, mids }));
      data = data.subarray(0, size);
      sock.send(data, proto);
      t.notOk(notARefusal(await nextAnswer(sock), 0, proto), `${format}: ${size} bytes refused with an ack`);
    }
    t.notOk(await ping(sock, 9, proto), `${format}: the socket still answers a ping`);
    sock.send(Buffer.alloc(HARD_LIMIT + 1, 0x20), proto);
    const closed = await sock.whenClosed();
    t.ok(closed && [1006, 1009].includes(closed.code), `${format}: ${HARD_LIMIT + 1} bytes close the socket (${closed?.code})`);
  }
  const bad = await Sock.open(svc.url, '/ws', ['odds.v1.json']);
  bad.send(Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d]), false);
  const closed = await bad.whenClosed();
  t.ok(closed && [1006, 1007].includes(closed.code), `a text frame that is not UTF-8 closes that socket (${closed?.code})`);
  const after = await Sock.open(svc.url, '/ws', ['odds.v1.json']);
  t.notOk(await ping(after, 10, false), 'a new socket is answered');
  after.close();
});

t.test(`/ws upgrade: generated hb values, query strings and subprotocol offers (seed ${SEED + 3})`, async (t) => {
  const g = new Gen(SEED + 3);
  const f = new Failures();
  const counts: Record<Expect, number> = { ok: 0, error: 0, either: 0 };
  const hbValue = () => g.one<string>([
    [3, () => String(g.int(0, 40000))],
    [2, () => g.pick(['', '499', '500', '30000', '30001', '0500', '05000', '-1000', '+1000', '1e3', '1000.0', '1000 ', ' 1000', '١٠٠٠', '１０００', 'NaN', '99999', '100000', '18446744073709551616'])],
    [2, () => nastyString(g, 20)],
  ]);
  const query = () => {
    const parts: string[] = [];
    if (g.chance(0.85)) parts.push(`hb=${encodeComponent(g, hbValue())}`);
    if (g.chance(0.1)) parts.push(`hb=${encodeComponent(g, hbValue())}`);
    if (g.chance(0.3)) parts.push(`${encodeComponent(g, nastyString(g, 8) || 'k')}=${encodeComponent(g, nastyString(g, 20))}`);
    let q = parts.join('&');
    if (g.chance(0.1)) q = percentGarbage(g, q);
    return q;
  };
  const protocols = () => g.one<string | undefined>([
    [3, () => g.pick(['odds.v1.json', 'odds.v1.proto', 'odds.v1.proto, odds.v1.json'])],
    [1, () => undefined],
    [2, () => (nastyString(g, 30).replace(/[^\x21-\x7e]/g, '') || 'x') + g.pick(['', ', odds.v1.json', ',,,'])],
  ]);
  const cases = take(250, () => ({ q: query(), proto: protocols() }));
  const SPOKEN = ['odds.v1.json', 'odds.v1.proto'];
  /** Offering subprotocols, none of them ours, is refused whatever the query. */
  const unspoken = (proto: string | undefined) => {
    const offered = (proto ?? '').split(',').map((p) => p.trim()).filter(Boolean);
    return offered.length > 0 && !offered.some((p) => SPOKEN.includes(p));
  };
  let upgraded = 0;
  await inPool(cases, 8, async ({ q, proto }) => {
    const expect = unspoken(proto) ? 'error' : hbOracle(q);
    counts[expect]++;
    const head = [`GET /ws?${q} HTTP/1.1`, 'Host: 127.0.0.1', 'Upgrade: websocket', 'Connection: Upgrade', 'Sec-WebSocket-Version: 13',
      'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', ...(proto === undefined ? [] : [`Sec-WebSocket-Protocol: ${proto}`])];
    const o = await rawHttp(svc.port, Buffer.from(head.join('\r\n') + '\r\n\r\n', 'latin1'));
    if (o.reply?.status === 101) upgraded++;
    const input = `GET /ws?${q} protocols=${show(proto)}`;
    if (expect === 'error') f.add(input, notAnError(o, [400]));
    else if (expect === 'ok') f.add(input, o.reply?.status === 101 ? undefined : `expected 101, got ${o.reply?.status ?? 'no answer'}: ${o.reply?.body.toString().slice(0, 100)}`);
    else f.add(input, o.reply?.status === 101 ? undefined : notAnError(o, [400]));
    if (o.reply?.status === 101 && expect !== 'error') {
      const offered = (proto ?? '').split(',').map((p) => p.trim());
      const chosen = o.reply.headers['sec-websocket-protocol'];
      const want = offered.find((p) => SPOKEN.includes(p));
      if ((chosen ?? undefined) !== want && !(want === undefined && !chosen)) f.add(input, `subprotocol ${chosen}, expected ${want}`);
    }
  });
  t.ok(upgraded > 20 && counts.error > 50, `${upgraded} upgrades, ${counts.error} refusals expected, ${counts.either} either`);
  f.assert(t, 'upgrade requests');
});

afterwards(t, svc, () => before);
