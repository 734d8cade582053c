import t, { type Test } from 'tap';
import { connect } from 'node:net';
import { http, postJson, startTestService } from '../helpers/service.js';
import { sqlClient } from '../helpers/db.js';
import { closedByPeer, portsOf, readByPeer } from '../helpers/net.js';
import { eventually, waitFor } from '../helpers/wait.js';

const svc = await startTestService(t);
const get = (path: string) => http<{ status: number; message: string }>(svc.url, path);

async function expectError(t: Test, path: string, status: number, mentions: RegExp, init?: RequestInit) {
  const r = await http<{ status: number; message: string }>(svc.url, path, init);
  t.equal(r.status, status, `${path} answers ${status}`);
  t.same(Object.keys(r.body as object), ['status', 'message']);
  t.equal(r.body.status, 0);
  t.match(r.body.message, mentions);
}

const ROUTES = ['/api/v1/sports/events?si=', '/api/v1/events/markets?eid=', '/api/v1/markets/result?mid='];
const NAMES = ['si', 'eid', 'mid'];

t.test('a missing ID list is a 400 naming the parameter', async (t) => {
  for (const [i, route] of ROUTES.entries()) await expectError(t, route.split('?')[0], 400, new RegExp(`^${NAMES[i]} is required`));
});

t.test('an empty ID list is a 400', async (t) => {
  for (const [i, route] of ROUTES.entries()) await expectError(t, route, 400, new RegExp(`^${NAMES[i]} `));
});

t.test('51 IDs is a 400 that states the limit of 50', async (t) => {
  const ids = Array.from({ length: 51 }, (_, i) => i + 1).join(',');
  for (const route of ROUTES) await expectError(t, route + ids, 400, /at most 50/);
});

t.test('IDs that are not positive integers are a 400', async (t) => {
  for (const bad of ['abc', '1.5', '-1', '0', '1e3', '01', '99999999999999999999']) {
    await expectError(t, `/api/v1/sports/events?si=${bad}`, 400, /positive integers/);
    await expectError(t, `/api/v1/events/markets?eid=${bad}`, 400, /positive integers/);
  }
});

t.test('spaces and empty entries in a list are a 400', async (t) => {
  await expectError(t, '/api/v1/sports/events?si=1,%202', 400, /without spaces/);
  await expectError(t, '/api/v1/sports/events?si=1,,2', 400, /si has ""/);
  await expectError(t, '/api/v1/markets/result?mid=1.1,%201.2', 400, /mid/);
});

t.test('a market ID outside [A-Za-z0-9._:-]{1,64} is a 400', async (t) => {
  await expectError(t, `/api/v1/markets/result?mid=${'a'.repeat(65)}`, 400, /market IDs/);
  await expectError(t, '/api/v1/markets/result?mid=1.1%00', 400, /market IDs/);
  await expectError(t, '/api/v1/markets/result?mid=%E2%9C%93', 400, /market IDs/);
});

t.test('li is checked like si', async (t) => {
  await expectError(t, '/api/v1/sports/events?si=4&li=x', 400, /^li /);
});

t.test('a parameter given twice is a 400', async (t) => {
  await expectError(t, '/api/v1/sports/events?si=1&si=2', 400, /si is given more than once/);
  // Not every parameter is a list: the refusal must not tell a caller of ?hb= to join IDs.
  await expectError(t, '/api/v1/sports/events?si=1&x=1&x=2', 400, /^x is given more than once; give each parameter once \(a list joins its IDs with commas\)$/);
});

t.test('malformed percent-encoding is a 400', async (t) => {
  await expectError(t, '/api/v1/sports/events?si=%ZZ', 400, /percent-encoding/);
});

t.test('an unknown route is a 404', async (t) => {
  await expectError(t, '/api/v2/sports', 404, /no route/);
});

t.test('a wrong method on a known route is a 405 with Allow', async (t) => {
  const r = await http(svc.url, '/api/v1/sports', { method: 'DELETE' });
  t.equal(r.status, 405);
  t.equal(r.headers.get('allow'), 'GET, HEAD');
  const p = await http(svc.url, '/api/v1/unsubscribe');
  t.equal(p.status, 405);
  t.equal(p.headers.get('allow'), 'POST');
});

t.test('a body that is not JSON is a 400', async (t) => {
  await expectError(t, '/api/v1/unsubscribe', 400, /not valid JSON/, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"data":' });
});

t.test('a body of the wrong shape is a 400 naming what is wrong', async (t) => {
  for (const [body, says] of [
    [[], /must be a JSON object/],
    [{ data: 'x' }, /must be a JSON object/],
    [{ data: [] }, /data must list 1 to 50/],
    [{ data: [1] }, /data\[0\] must be a market ID/],
    [{ data: ['ok', 'bad id'] }, /data\[1\]/],
    [{ data: Array.from({ length: 51 }, (_, i) => `1.${i}`) }, /got 51/],
  ] as const) {
    const r = await postJson<{ status: number; message: string }>(svc.url, '/api/v1/subscribe', body);
    t.equal(r.status, 400);
    t.match(r.body.message, says);
  }
});

t.test('a wrong content type is a 415', async (t) => {
  await expectError(t, '/api/v1/subscribe', 415, /content-type must be application\/json/, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"data":["1.1"]}' });
});

t.test('what an HTML form of another site can send (no preflight) is a 415 on every POST route, and changes nothing', async (t) => {
  // Browsers send these three cross-origin without asking first; application/json and protobuf need a preflight this service never grants.
  const forms: [string, string][] = [
    ['text/plain', '{"data":["1.200001001"]}'],
    ['application/x-www-form-urlencoded', 'data=1.200001001'],
    ['multipart/form-data; boundary=b', '--b\r\nContent-Disposition: form-data; name="data"\r\n\r\n1.200001001\r\n--b--\r\n'],
  ];
  const odds = JSON.stringify({ data: [{ kind: 'odds', mid: '1.200001001', ts: Date.now(), st: 'OPEN', ip: true, r: [{ rid: 1, st: 'ACTIVE', b: [[1000, 99999]], l: [] }] }] });
  const c = await sqlClient(t, svc.databaseUrl);
  const stored = async () => (await c.query('SELECT count(*)::int AS n FROM client_markets')).rows[0].n as number;
  const before = await stored();
  const held = svc.book.get('1.200001001');
  for (const [type, body] of forms) {
    for (const path of ['/api/v1/subscribe', '/api/v1/unsubscribe']) {
      await expectError(t, path, 415, /^content-type must be application\/json$/, { method: 'POST', headers: { 'content-type': type }, body });
    }
    await expectError(t, '/api/v1/ingest', 415, /^content-type must be application\/json or application\/x-protobuf$/, { method: 'POST', headers: { 'content-type': type }, body: odds });
  }
  t.equal(await stored(), before, 'no stored set changed');
  t.equal(svc.book.get('1.200001001'), held, 'no price was taken');
});

t.test('a body over 1 MiB is a 413', async (t) => {
  const body = JSON.stringify({ data: ['1.1'], pad: 'x'.repeat(1024 * 1024) });
  await expectError(t, '/api/v1/subscribe', 413, /larger than 1048576 bytes/, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
});

t.test('a chunked body that grows past 1 MiB is a 413', async (t) => {
  const chunk = 'x'.repeat(64 * 1024);
  const stream = new ReadableStream({
    start(ctl) {
      for (let i = 0; i < 20; i++) ctl.enqueue(new TextEncoder().encode(chunk));
      ctl.close();
    },
  });
  const r = await fetch(svc.url + '/api/v1/subscribe', { method: 'POST', headers: { 'content-type': 'application/json' }, body: stream, duplex: 'half' } as RequestInit);
  t.equal(r.status, 413);
});

t.test('bodies still arriving are bounded per caller (BODY_BYTES_PER_SOURCE): past it a request is refused 429 unread, and the bytes come back once those bodies end', async (t) => {
  const small = await startTestService(t, { BODY_BYTES_PER_SOURCE: String(2 * 1024 * 1024) });
  const head = `POST /api/v1/subscribe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${1024 * 1024}\r\n\r\n`;
  const open = async (body: string) => {
    const s = connect(small.port, '127.0.0.1');
    s.on('error', () => undefined);
    let answer = '';
    s.on('data', (d: Buffer) => (answer += d.toString()));
    await new Promise((ok) => s.once('connect', ok));
    s.write(head + body);
    t.teardown(() => s.destroy());
    return { s, answer: () => answer };
  };
  // Two uploads of 1 MiB that stall after their first bytes hold the caller's 2 MiB.
  const slow = [await open('{"data":['), await open('{"data":[')];
  for (const { s } of slow) await waitFor(() => readByPeer(s), 'the server read the start of a slow body', 10000);
  const third = await open('');
  await waitFor(() => third.answer().includes('\r\n\r\n') && third.s.closed, () => `the third request answered and closed (so far: ${JSON.stringify(third.answer().slice(0, 60))})`, 10000);
  t.match(third.answer(), /^HTTP\/1\.1 429 /);
  t.match(third.answer(), /Retry-After: 1/i);
  t.match(third.answer(), /2097152 bytes of request bodies from this caller are still arriving \(the limit is 2097152\); send this once one of them is answered \(this request was not read\)/);
  t.same(slow.map(({ answer }) => answer()), ['', ''], 'the slow ones are still being read');
  for (const { s } of slow) s.destroy();
  const r = await eventually(() => postJson(small.url, '/api/v1/subscribe', { data: ['1.1'] }), (r) => r.status === 200, 10000);
  t.equal(r.status, 200, 'once they went away, the caller is read again');
});

t.test('a client that pipelines requests and reads no answer is closed once an answer cannot go out whole, not buffered for', async (t) => {
  const path = '/api/v1/sports/events?si=1,2,4,7';
  const N = 4000;
  const s = connect(svc.port, '127.0.0.1');
  s.on('error', () => undefined);
  await new Promise((ok) => s.once('connect', ok));
  s.pause();
  t.teardown(() => s.destroy());
  // uWS held every answer of such a client in the process (four of them reached 2.8 GB in
  // 10 s) until its idle timeout of 10 s; now the answer that does not fit the socket is
  // written as the client reads, and the next request it pipelined closes the connection.
  s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`.repeat(N));
  await waitFor(() => closedByPeer(portsOf(s)), 'the server closed the connection', 5000);
});

t.test('bad bodies change nothing', async (t) => {
  const c = await sqlClient(t, svc.databaseUrl);
  const before = (await c.query('SELECT count(*)::int AS n FROM client_markets')).rows[0].n;
  await postJson(svc.url, '/api/v1/subscribe', { data: ['1.1', 'bad id'] });
  await http(svc.url, '/api/v1/subscribe', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"data":["1.1"' });
  const after = (await c.query('SELECT count(*)::int AS n FROM client_markets')).rows[0].n;
  t.equal(after, before);
});

t.test('an aborted request leaves the server answering', async (t) => {
  const s = connect(svc.port, '127.0.0.1');
  await new Promise((ok) => s.once('connect', ok));
  s.write('POST /api/v1/subscribe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"data":[');
  await waitFor(() => readByPeer(s), 'the server read the start of the request', 10000);
  s.destroy();
  const r = await get('/health');
  t.equal(r.status, 200);
});

t.test('garbage on the socket does not take the process down', async (t) => {
  const s = connect(svc.port, '127.0.0.1');
  s.on('error', () => undefined);
  await new Promise((ok) => s.once('connect', ok));
  s.write(Buffer.from([0, 255, 13, 10, 13, 10, 1, 2, 3]));
  // The server has read it once it closed the connection, or holds it with nothing left unread.
  await waitFor(() => s.closed || readByPeer(s), 'the server read the garbage', 10000);
  s.destroy();
  const r = await get('/api/v1/sports');
  t.equal(r.status, 200);
});
