/**
 * HTTP/1.1 as RFC 9112 has it, over raw sockets: framing two readers could take differently is
 * refused and its connection closed (no request smuggled behind it is served), HEAD answers
 * wherever GET does, an oversize body's 413 reaches a client still sending it, and a JSON body
 * that is not UTF-8 is refused naming its field. What uWS itself does before the service sees a
 * request differs by build (src/http/framing.ts): those cases assert what holds on both.
 */
import t, { type Test } from 'tap';
import { connect, type Socket } from 'node:net';
import { http, metricsUrlOf, startTestService } from '../helpers/service.js';
import { sqlClient } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { uwsBuild } from '../../src/http/uws.js';

const svc = await startTestService(t);
const db = await sqlClient(t, svc.databaseUrl);

interface Conversation {
  sock: Socket;
  /** Everything the server sent, as latin1. */
  said(): string;
  closed(): boolean;
}

async function open(t: Test, port = svc.port): Promise<Conversation> {
  const sock = connect(port, '127.0.0.1');
  let said = '';
  let closed = false;
  sock.on('data', (d: Buffer) => (said += d.toString('latin1')));
  sock.on('error', () => undefined);
  sock.on('close', () => (closed = true));
  await new Promise((ok) => sock.once('connect', ok));
  t.teardown(() => sock.destroy());
  return { sock, said: () => said, closed: () => closed };
}

/** Sends `bytes` and waits until the server has closed the connection. */
async function closedAfter(t: Test, bytes: string | Buffer, what: string): Promise<string> {
  const c = await open(t);
  c.sock.write(bytes);
  await waitFor(c.closed, () => `${what}: the server closed the connection (it said ${JSON.stringify(c.said().slice(0, 200))})`, 10_000);
  return c.said();
}

const responses = (said: string): string[] => said.split(/(?=HTTP\/1\.1 \d{3} )/).filter(Boolean);
const stored = async () => (await db.query('SELECT count(*)::int AS n FROM client_markets')).rows[0].n as number;
const subscribe = (mid: string) => {
  const body = JSON.stringify({ data: [mid] });
  return `POST /api/v1/subscribe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
};

t.test('two Content-Lengths that differ: 400 and the connection closed; a request smuggled behind is never served', async (t) => {
  const before = await stored();
  const smuggled = subscribe('1.200001001');
  const body = '{"data":[]}' + smuggled;
  // A proxy reading the second length forwards the whole; one reading the first serves the rest as a request of its own.
  const head = `POST /api/v1/unsubscribe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 11\r\nContent-Length: ${body.length}\r\n\r\n`;
  const said = await closedAfter(t, head + body, 'lengths that differ, a request behind');
  for (const r of responses(said)) t.match(r, /^HTTP\/1\.1 400 [^]*Content-Length is given more than once with different values/, 'anything answered is the 400');
  t.equal(await stored(), before, 'the smuggled subscribe changed nothing');
  const alone = await closedAfter(t, head.replace(`Content-Length: ${body.length}`, 'Content-Length: 12') + '{"data":[1]}', 'lengths that differ');
  t.match(alone, /^HTTP\/1\.1 400 Bad Request\r\n/, 'answered 400');
  t.match(alone, /"message":"Content-Length is given more than once with different values: the request is refused and the connection closed"/);
  t.equal(responses(alone).length, 1);
});

t.test('the same Content-Length twice is one length (RFC 9110 8.6): served', async (t) => {
  const c = await open(t);
  c.sock.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n');
  await waitFor(() => c.said().includes('Server is running'), 'the health answer', 10_000);
  t.match(c.said(), /^HTTP\/1\.1 200 OK/);
});

t.test('Host given twice: 400 and closed', async (t) => {
  const said = await closedAfter(t, 'GET /api/v1/sports HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n', 'two Hosts');
  t.match(said, /^HTTP\/1\.1 400 /);
  t.equal(responses(said).length, 1);
});

t.test('a Content-Length that is no number, or beside a Transfer-Encoding: never served, the connection closed (a 400 where the uWS build answers at all)', async (t) => {
  const before = await stored();
  for (const [what, head] of [
    ['a length that is no number', 'Content-Length: 1x'],
    ['a list of lengths', 'Content-Length: 16, 16'],
    ['a length and chunked', 'Content-Length: 16\r\nTransfer-Encoding: chunked'],
  ]) {
    const body = '{"data":["1.9"]}';
    const said = await closedAfter(t, `POST /api/v1/subscribe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${head}\r\n\r\n${body}`, what);
    t.notMatch(said, /HTTP\/1\.1 [^4]/, `${what}: nothing but a refusal (${uwsBuild.name} said ${JSON.stringify(said.slice(0, 40))})`);
  }
  t.equal(await stored(), before, 'nothing stored');
});

t.test('HTTP/1.1 without Host: refused and closed at once, never left to time out', async (t) => {
  const c = await open(t);
  c.sock.write('GET /api/v1/sports HTTP/1.1\r\nAccept: */*\r\n\r\n');
  await waitFor(c.closed, 'closed', 5000);
  t.notMatch(c.said(), /HTTP\/1\.1 [^4]/, `nothing but a 400 (${uwsBuild.name} said ${JSON.stringify(c.said().slice(0, 40))})`);
});

t.test('HEAD answers wherever GET does: the same status and headers, no body', async (t) => {
  const asset = (await http(svc.url, '/')).text.match(/\/assets\/[^"]+\.js/)![0];
  const paths = ['/', asset, '/health', '/ready', '/openapi.json', '/api/v1/sports', '/api/v1/sports/events?si=4', '/api/v1/events/markets?eid=30000001',
    '/api/v1/markets/result?mid=1.200001001', '/api/v1/sports/events', '/nowhere'];
  for (const path of paths) {
    const get = await http(svc.url, path);
    const c = await open(t);
    // A HEAD, then a GET of /health on the same connection: after the HEAD's headers the next answer starts at once.
    c.sock.write(`HEAD ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    await waitFor(() => c.said().includes('Server is running'), `${path}: both answered`, 10_000);
    const [head, next] = responses(c.said());
    t.match(head, new RegExp(`^HTTP/1\\.1 ${get.status} `), `${path}: HEAD says ${get.status} as GET does`);
    t.ok(head.endsWith('\r\n\r\n'), `${path}: no body`);
    t.match(head.toLowerCase(), `content-length: ${Buffer.byteLength(get.text)}\r\n`, `${path}: the GET's length`);
    t.match(head.toLowerCase(), `content-type: ${get.headers.get('content-type')}`, `${path}: the GET's type`);
    t.match(next, /^HTTP\/1\.1 200 OK/);
  }
  const metrics = await fetch(`${metricsUrlOf(svc.url)}/metrics`, { method: 'HEAD' });
  t.equal(metrics.status, 200, 'the scrape answers HEAD too');
  const allow = await http(svc.url, '/api/v1/sports', { method: 'DELETE' });
  t.equal(allow.headers.get('allow'), 'GET, HEAD', '405 lists HEAD');
});

t.test('a 2 MiB body: the client, still sending, reads the 413; the connection is then reused', async (t) => {
  const body = JSON.stringify({ data: ['1.1'], pad: 'x'.repeat(2 * 1024 * 1024) });
  const r = await fetch(`${svc.url}/api/v1/unsubscribe`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  t.equal(r.status, 413);
  t.same(await r.json(), { status: 0, message: 'request body is larger than 1048576 bytes' });
  const c = await open(t);
  c.sock.write(`POST /api/v1/unsubscribe HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  await waitFor(() => c.said().includes('Server is running'), 'the request after it answered', 10_000);
  t.match(responses(c.said()).map((x) => x.slice(0, 16)), ['HTTP/1.1 413 Pay', 'HTTP/1.1 200 OK\r']);
  t.notOk(c.closed(), 'kept open');
});

t.test('a JSON body that is not UTF-8: 400 naming the field, nothing stored', async (t) => {
  const bytes = (...parts: (string | number[])[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));
  const post = (path: string, body: Buffer) => http<{ status: number; message: string }>(svc.url, path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: new Uint8Array(body) });
  const sub = await post('/api/v1/subscribe', bytes('{"data":["1.1","1.', [0xff], '"]}'));
  t.equal(sub.status, 400);
  t.equal(sub.body.message, 'data[1] is not valid UTF-8 (byte 18 of the body)');
  const event = bytes('{"data":[{"kind":"sport","si":4,"na":"Cricket ', [0xc3, 0x28], '","a":true}]}');
  const ing = await post('/api/v1/ingest', event);
  t.equal(ing.status, 400);
  t.equal(ing.body.message, 'data[0].na is not valid UTF-8 (byte 46 of the body)');
  t.same((await db.query('SELECT na FROM sports WHERE si = 4')).rows, [{ na: 'Cricket' }], 'nothing stored (it was stored as U+FFFD)');
  const key = await post('/api/v1/subscribe', bytes('{"da', [0xed, 0xa0, 0x80], '":["1.1"]}'));
  t.equal(key.body.message, 'the body (a key) is not valid UTF-8 (byte 4 of the body)');
  const loose = await post('/api/v1/subscribe', bytes('{"data":', [0xf8], '}'));
  t.equal(loose.body.message, 'request body is not valid UTF-8 (byte 8)');
});
