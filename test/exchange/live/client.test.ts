import t, { type Test } from 'tap';
import { FakeClock } from '../../helpers/clock.js';
import { ExchangeStream, type ExchangeStreamOptions } from '../../../src/exchange/live/client.js';
import type { StreamError } from '../../../src/exchange/live/errors.js';
import type { MarketChangeMessage } from '../../../src/exchange/stream.js';
import { APP_KEY, EsaServer, SESSION, TEST_CA, playScript, type EsaConnection } from '../esa-server.js';
import { DELTAS, IMAGE, INITIAL_CLK, MARKET_ID, SEGMENTED, clkOf, segmentsOf } from '../esa-script.js';

/** Everything one client told, in order, and a way to wait for a state of it. */
interface Seen {
  stream: ExchangeStream;
  connected: string[];
  subscribed: { resumed: boolean }[];
  changes: MarketChangeMessage[];
  health: (number | null)[];
  reconnects: StreamError[];
  stopped: (StreamError | undefined)[];
  until(ok: () => boolean, what: string): Promise<void>;
}

function follow(t: Test, esa: EsaServer, opts: Partial<ExchangeStreamOptions> = {}): Seen {
  const stream = new ExchangeStream({
    host: '127.0.0.1', port: esa.port, appKey: APP_KEY, session: SESSION, ca: TEST_CA,
    marketFilter: { marketIds: [MARKET_ID] }, heartbeatMs: 500, backoff: { minMs: 20, maxMs: 100 }, ...opts,
  });
  let wake = () => {};
  const seen: Seen = {
    stream, connected: [], subscribed: [], changes: [], health: [], reconnects: [], stopped: [],
    async until(ok, what) {
      // Only a guard against hanging: the test fails saying what never happened.
      const deadline = Date.now() + 20_000;
      while (!ok()) {
        if (Date.now() > deadline) throw new Error(`never saw ${what}; reconnects: ${seen.reconnects.map((e) => e.message).join(' | ')}`);
        await new Promise<void>((r) => { wake = r; setTimeout(r, 200); });
      }
    },
  };
  const note = <A extends unknown[]>(list: (A[0])[]) => (...args: A) => { list.push(args[0]); wake(); };
  stream.on('connected', note(seen.connected));
  stream.on('subscribed', note(seen.subscribed));
  stream.on('change', (msg) => { if (msg.ct !== 'HEARTBEAT') seen.changes.push(msg); wake(); });
  stream.on('health', note(seen.health));
  stream.on('reconnecting', note(seen.reconnects));
  stream.on('stopped', (reason) => { seen.stopped.push(reason); wake(); });
  t.teardown(() => stream.stop());
  stream.start();
  return seen;
}

const clks = (seen: Seen) => seen.changes.map((m) => m.clk);
const ALL_CLKS = [clkOf(0), ...DELTAS.map((d) => d.clk)];
const hasClk = (seen: Seen, clk: string) => () => seen.changes.some((m) => m.clk === clk);

t.test('authenticates, then subscribes with the market filter, the data filter and the heartbeat', async (t) => {
  const esa = await EsaServer.start(t, [{ play: playScript() }]);
  const seen = follow(t, esa, { conflateMs: 0 });
  await seen.until(() => seen.changes.length > 0, 'the image');
  const [auth, sub] = (await esa.connection(1)).requests;
  t.same(auth, { op: 'authentication', id: 1, appKey: APP_KEY, session: SESSION });
  t.same(sub, {
    op: 'marketSubscription', id: 2, marketFilter: { marketIds: [MARKET_ID] },
    marketDataFilter: { fields: ['EX_BEST_OFFERS', 'EX_TRADED', 'EX_TRADED_VOL', 'EX_LTP', 'EX_MARKET_DEF'], ladderLevels: 10 },
    segmentationEnabled: true, heartbeatMs: 500, conflateMs: 0,
  }, 'a first subscription carries no clk');
  t.same(seen.connected, ['002-100000'], 'the connection id is reported');
  t.same(seen.subscribed, [{ resumed: false, connectionsAvailable: undefined }]);
});

t.test('hands on the image and every delta, in the order sent', async (t) => {
  const esa = await EsaServer.start(t, [{ play: playScript() }]);
  const seen = follow(t, esa);
  await seen.until(hasClk(seen, clkOf(8)), 'the last delta');
  t.same(seen.changes, [IMAGE, ...DELTAS]);
});

t.test('a dropped connection resubscribes with initialClk and clk and continues with nothing lost or repeated', async (t) => {
  const esa = await EsaServer.start(t, [{ play: playScript({ upTo: 3, then: 'drop' }) }, { play: playScript() }]);
  const seen = follow(t, esa);
  await seen.until(hasClk(seen, clkOf(8)), 'the last delta');
  const [resub] = (await esa.connection(2)).subscriptions;
  t.equal(resub.initialClk, INITIAL_CLK, 'the initialClk of the image');
  t.equal(resub.clk, clkOf(3), 'the clk of the last delta before the drop');
  t.same(clks(seen), ALL_CLKS, 'every change exactly once, in order');
  t.equal(seen.changes[4].ct, 'RESUB_DELTA', 'the change missed while away comes as the RESUB_DELTA');
  t.same(seen.subscribed.map((s) => s.resumed), [false, true]);
  t.same(seen.reconnects.map((e) => e.code), ['SOCKET']);
});

t.test('a server that goes silent is asked for a heartbeat, then left, and the subscription resumed', async (t) => {
  const esa = await EsaServer.start(t, [{ play: playScript({ upTo: 4, then: 'hush' }) }, { play: playScript() }]);
  const seen = follow(t, esa);
  await seen.until(hasClk(seen, clkOf(8)), 'the deltas after the resume');
  t.match(seen.reconnects[0], { code: 'SILENT', message: /sent nothing for \d+ ms \(heartbeat 500 ms\)/ });
  t.ok((await esa.connection(1)).requests.some((r) => r.op === 'heartbeat'), 'a heartbeat request went out first');
  t.equal((await esa.connection(2)).subscriptions[0].clk, clkOf(4));
  t.same(clks(seen), ALL_CLKS);
});

t.test('a segmented change is handed on once, whole', async (t) => {
  const esa = await EsaServer.start(t, [{
    play: (conn) => {
      conn.send(IMAGE);
      for (const seg of segmentsOf(SEGMENTED)) conn.send(seg);
      conn.beat(500);
    },
  }]);
  const seen = follow(t, esa);
  await seen.until(hasClk(seen, SEGMENTED.clk), 'the joined change');
  t.same(seen.changes, [IMAGE, SEGMENTED]);
});

t.test('a connection lost mid-segment hands on nothing of that change and resumes before it', async (t) => {
  const esa = await EsaServer.start(t, [
    {
      play: (conn) => {
        conn.send(IMAGE);
        conn.send(DELTAS[0]);
        for (const seg of segmentsOf(SEGMENTED).slice(0, 2)) conn.send(seg);
        conn.end();
      },
    },
    {
      play: (conn) => {
        conn.send({ ...SEGMENTED, ct: 'RESUB_DELTA' });
        conn.beat(500);
      },
    },
  ]);
  const seen = follow(t, esa);
  await seen.until(hasClk(seen, SEGMENTED.clk), 'the change after the resume');
  t.equal((await esa.connection(2)).subscriptions[0].clk, DELTAS[0].clk, 'resumed from the last whole change');
  t.same(seen.changes, [IMAGE, DELTAS[0], { ...SEGMENTED, ct: 'RESUB_DELTA' }]);
});

t.test('a refused session stops the client with the exchange\'s code and words, without retrying', async (t) => {
  const esa = await EsaServer.start(t, [{ play: playScript() }]);
  const seen = follow(t, esa, { session: 'expired-token' });
  await seen.until(() => seen.stopped.length > 0, 'the stop');
  t.match(seen.stopped[0], {
    code: 'INVALID_SESSION_INFORMATION', fatal: true,
    message: 'the exchange refused the authentication: INVALID_SESSION_INFORMATION: Session token is invalid',
  });
  t.same(seen.reconnects, []);
  t.equal(esa.connections.length, 1);
});

t.test('a refusal that may pass (too many connections) is retried', async (t) => {
  const esa = await EsaServer.start(t, [
    { refuseAuth: { errorCode: 'MAX_CONNECTION_LIMIT_EXCEEDED', errorMessage: 'Connection limit exceeded' } },
    { play: playScript() },
  ]);
  const seen = follow(t, esa);
  await seen.until(hasClk(seen, clkOf(8)), 'the stream after the retry');
  t.match(seen.reconnects, [{ code: 'MAX_CONNECTION_LIMIT_EXCEEDED', fatal: false, message: /refused the authentication: MAX_CONNECTION_LIMIT_EXCEEDED/ }]);
});

t.test('a line over the length limit is a clear error, then a reconnect that resumes', async (t) => {
  const esa = await EsaServer.start(t, [
    { play: (conn) => { conn.send(IMAGE); conn.sendRaw(`{"op":"mcm","id":2,"pad":"${'x'.repeat(5000)}"}\r\n`); } },
    { play: playScript() },
  ]);
  const seen = follow(t, esa, { maxLineBytes: 4096 });
  await seen.until(hasClk(seen, clkOf(8)), 'the stream after the reconnect');
  t.match(seen.reconnects, [{ code: 'LINE_TOO_LONG', message: /longer than 4096 bytes/ }]);
  t.equal((await esa.connection(2)).subscriptions[0].clk, clkOf(0));
  t.same(clks(seen), ALL_CLKS);
});

t.test('a line that is not JSON is a clear error, then a reconnect that resumes', async (t) => {
  const esa = await EsaServer.start(t, [
    { play: (conn) => { conn.send(IMAGE); conn.sendRaw('{"op":"mcm","id":2,"mc":[{\r\n'); } },
    { play: playScript() },
  ]);
  const seen = follow(t, esa);
  await seen.until(hasClk(seen, clkOf(8)), 'the stream after the reconnect');
  t.match(seen.reconnects, [{ code: 'BAD_JSON', message: /not JSON .*\{"op":"mcm","id":2,"mc":\[\{/ }]);
  t.same(clks(seen), ALL_CLKS);
});

t.test('the exchange\'s 503 health flag is reported when set and when cleared', async (t) => {
  const esa = await EsaServer.start(t, [{
    play: (conn) => {
      conn.send(IMAGE);
      conn.send({ ...DELTAS[0], status: 503 });
      conn.send(DELTAS[1]);
      conn.beat(500);
    },
  }]);
  const seen = follow(t, esa);
  await seen.until(hasClk(seen, clkOf(2)), 'the second delta');
  t.same(seen.health, [503, null]);
  t.same(seen.reconnects, [], 'a 503 is no reason to disconnect');
});

t.test('a clk the exchange no longer knows (INVALID_CLOCK) starts over with a fresh image', async (t) => {
  const esa = await EsaServer.start(t, [
    { play: playScript({ upTo: 2, then: 'drop' }) },
    { play: (conn, sub) => { conn.send({ op: 'status', id: sub.id, statusCode: 'FAILURE', errorCode: 'INVALID_CLOCK', errorMessage: 'expired', connectionClosed: true }); conn.end(); } },
    { play: playScript() },
  ]);
  const seen = follow(t, esa);
  await seen.until(() => seen.changes.filter((m) => m.ct === 'SUB_IMAGE').length === 2, 'the second image');
  t.equal((await esa.connection(2)).subscriptions[0].clk, clkOf(2));
  t.notOk('clk' in (await esa.connection(3)).subscriptions[0], 'the third subscription starts afresh');
  t.match(seen.reconnects.map((e) => e.code), ['SOCKET', 'INVALID_CLOCK']);
});

t.test('the server certificate is verified: without its CA the connection fails and says why', async (t) => {
  const esa = await EsaServer.start(t, [{ play: playScript() }]);
  const seen = follow(t, esa, { ca: undefined });
  await seen.until(() => seen.reconnects.length > 0, 'the failure');
  seen.stream.stop();
  t.match(seen.reconnects[0], { code: 'SOCKET', message: /connection to 127\.0\.0\.1:\d+ failed: .*self-signed certificate/i });
  t.same(seen.changes, []);
});

t.test('a segmented change that never ends is refused at the byte cap, and the connection resumes from the last whole change', async (t) => {
  const seg = (type: string) => ({ op: 'mcm', id: 2, pt: 1, segmentType: type, mc: [{ id: MARKET_ID, rc: [{ id: 47972, atb: [[2, 1]], pad: 'x'.repeat(1000) }] }] });
  const esa = await EsaServer.start(t, [
    {
      play: (conn) => {
        conn.send(IMAGE);
        conn.send(DELTAS[0]);
        conn.send(seg('SEG_START'));
        // SEG after SEG, never a SEG_END: about 1 KB each, so the cap (8 KB here) is passed within a few.
        for (let i = 0; i < 50; i++) conn.send(seg('SEG'));
      },
    },
    { play: playScript() },
  ]);
  const seen = follow(t, esa, { maxSegmentBytes: 8 * 1024 });
  await seen.until(hasClk(seen, clkOf(8)), 'the stream after the resume');
  t.match(seen.reconnects, [{ code: 'SEGMENTS_TOO_LARGE', message: 'a segmented change passed 8192 bytes without its SEG_END' }]);
  t.equal((await esa.connection(2)).subscriptions[0].clk, DELTAS[0].clk, 'resumed from the last whole change');
});

t.test('a segmented change that stalls is ended by the watchdog though segments keep the connection busy', async (t) => {
  let trickle: NodeJS.Timeout | undefined;
  t.teardown(() => clearInterval(trickle));
  const esa = await EsaServer.start(t, [
    {
      play: (conn) => {
        conn.send(IMAGE);
        conn.send({ op: 'mcm', id: 2, pt: 1, segmentType: 'SEG_START', mc: [] });
        // A small SEG every 100 ms: never silent, never whole, far under the byte cap.
        trickle = setInterval(() => conn.send({ op: 'mcm', id: 2, pt: 1, segmentType: 'SEG', mc: [] }), 100);
      },
    },
    { play: playScript() },
  ]);
  const seen = follow(t, esa, { handshakeMs: 1000 });
  await seen.until(hasClk(seen, clkOf(8)), 'the stream after the resume');
  clearInterval(trickle);
  t.match(seen.reconnects, [{ code: 'SEGMENTS_STALLED', message: /a segmented change was still not whole after 3000 ms of reading/ }]);
});

t.test('paused, the client stops reading: the server sees its writes back up, and the watchdog waits; resumed, it reads on', async (t) => {
  let server: EsaConnection | undefined;
  const esa = await EsaServer.start(t, [{ play: (conn) => { server = conn; conn.send(IMAGE); conn.beat(200); } }]);
  // Its watchdog on a clock this test moves: the heartbeat intervals pass exactly when the test says.
  const clock = new FakeClock(Date.now());
  const seen = follow(t, esa, { heartbeatMs: 200, handshakeMs: 500, clock });
  await seen.until(() => seen.changes.length === 1, 'the image');
  seen.stream.pause();
  const pad = 'x'.repeat(64 * 1024);
  let backedUp = false;
  for (let i = 0; i < 2000 && !backedUp; i++) {
    backedUp = !server!.write({ op: 'mcm', id: 2, pt: 2, clk: `p${i}`, mc: [{ id: MARKET_ID, rc: [{ id: 47972, pad }] }] });
    if (i % 50 === 49) await new Promise((ok) => setImmediate(ok)); // a turn of the loop for the sockets to move what was written
  }
  t.ok(backedUp, 'the server\'s socket stopped taking writes');
  const heard = seen.changes.length;
  clock.advance(1500);
  t.equal(seen.changes.length, heard, 'nothing read while paused');
  t.same(seen.reconnects, [], 'paused for seven heartbeat intervals, yet not taken for silent');
  seen.stream.resume();
  await seen.until(() => seen.changes.some((c) => c.clk?.startsWith('p')), 'the writes once resumed');
  t.same(seen.reconnects, []);
});

t.test('resubscribe asks for a fresh image on the same connection: a subscription without clk', async (t) => {
  const esa = await EsaServer.start(t, [{ play: playScript() }]);
  const seen = follow(t, esa);
  await seen.until(hasClk(seen, clkOf(8)), 'the last delta');
  t.ok(seen.stream.resubscribe());
  await seen.until(() => seen.changes.filter((c) => c.ct === 'SUB_IMAGE').length === 2, 'the second image');
  const conn = await esa.connection(1);
  t.equal(conn.subscriptions.length, 2);
  t.same(conn.subscriptions[1], { ...conn.subscriptions[0], id: conn.subscriptions[1].id }, 'the same subscription');
  t.notOk('clk' in conn.subscriptions[1] || 'initialClk' in conn.subscriptions[1], 'without clks');
  t.equal(esa.connections.length, 1, 'no new connection');
});
