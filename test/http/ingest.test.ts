import t from 'tap';
import WebSocket from 'ws';
import { createKey } from '../../src/auth/keys.js';
import { odds as pb } from '../../src/odds/gen/odds.js';
import { encodeIngestProto } from '../../src/odds/ingest-codec.js';
import { http, keyLive, startTestService } from '../helpers/service.js';
import { image } from '../helpers/ws.js';
import { waitFor } from '../helpers/wait.js';
import { Publisher } from '../faults/publisher-socket.js';

/** The publishers' routes with keys in force: how a key is given, and what a body may hold before it is decoded. */
const svc = await startTestService(t, { AUTH: 'on', REST_RATE_LIMIT: '1000' });
const { token } = await createKey(svc.pool, 'feeder', 'publisher');
await keyLive(svc.url, token);
const M = '1.200001001';

t.test('a protobuf IngestBatch of 520,000 empty runners is refused by its count, before it is decoded', async (t) => {
  const body = Buffer.from(pb.v1.IngestBatch.encode({ data: [{ odds: { mid: M, ts: 1, r: Array.from({ length: 520_000 }, () => ({})) } }] }).finish()) as Uint8Array<ArrayBuffer>;
  t.ok(body.length <= 1024 * 1024, `${body.length} bytes: within the body limit`);
  const r = await http<{ status: number; message: string }>(svc.url, '/api/v1/ingest', {
    method: 'POST', headers: { 'content-type': 'application/x-protobuf', 'x-api-key': token }, body,
  });
  t.equal(r.status, 400);
  // The decoded path says "r must be an array of at most 500 runners"; this is the wire count's wording.
  t.same(r.body, { status: 0, message: 'request body data[0].odds.r holds more than 500 runners; the limit is 500 (counted before decoding)' });
});

t.test('a batch with more items than INGEST_MAX_ITEMS is refused by its count too', async (t) => {
  const body = Buffer.from(pb.v1.IngestBatch.encode({ data: Array.from({ length: 5001 }, () => ({ sport: { si: 1 } })) }).finish()) as Uint8Array<ArrayBuffer>;
  const r = await http(svc.url, '/api/v1/ingest', { method: 'POST', headers: { 'content-type': 'application/x-protobuf', 'x-api-key': token }, body });
  t.same([r.status, r.body], [400, { status: 0, message: 'request body data holds more than 5000 items; the limit is 5000 (counted before decoding)' }]);
});

t.test('a protobuf odds item the service cannot read (a runner status it does not know) is refused alone, as in JSON: the rest of the batch is applied', async (t) => {
  const M2 = '1.200001002';
  const readable = pb.v1.IngestBatch.decode(encodeIngestProto([{ kind: 'sport', si: 77, na: 'Bandy', a: true }, image(M, 3)])).data;
  const body = Buffer.from(pb.v1.IngestBatch.encode({ data: [...readable, { odds: { mid: M2, ts: 1, r: [{ rid: 1, st: 99 as never }] } }] }).finish()) as Uint8Array<ArrayBuffer>;
  const r = await http<Record<string, unknown>>(svc.url, '/api/v1/ingest', { method: 'POST', headers: { 'content-type': 'application/x-protobuf', 'x-api-key': token }, body });
  t.same([r.status, r.body], [200, {
    status: 1, message: 'Ingested 2 items; refused 1', refused: [{ i: 2, mid: M2, message: `item 2 (odds ${M2}): unknown r[0].st 99` }],
  }]);
  const reader = await createKey(svc.pool, 'reader', 'subscriber');
  await keyLive(svc.url, reader.token);
  const sports = await http<{ si: number }[]>(svc.url, '/api/v1/sports', { headers: { 'x-api-key': reader.token } });
  t.ok(sports.body.some((s) => s.si === 77), 'the sport of the same batch was written');
});

t.test('/ingest takes the key in the header only: a key in the URL is refused with 401 saying so', async (t) => {
  const ws = new WebSocket(`${svc.url.replace(/^http/, 'ws')}/ingest?key=${token}`);
  const refused = await new Promise<{ status: number; body: string }>((ok) => ws.once('unexpected-response', (req, res) => {
    let body = '';
    res.on('data', (d: Buffer) => (body += d));
    res.on('end', () => {
      req.destroy();
      ok({ status: res.statusCode ?? 0, body });
    });
  }));
  t.equal(refused.status, 401);
  t.same(JSON.parse(refused.body), {
    status: 0, message: 'publishers send the API key in the x-api-key header only; a key in the /ingest URL is refused (and should be treated as exposed)',
  });
  const pub = await Publisher.open(svc.url, { 'x-api-key': token });
  t.teardown(() => pub.close());
  pub.send(1, [image(M)]);
  t.match(await pub.ack(1), { status: 1, message: 'Ingested 1 item' }, 'the same key in the header works');
});

t.test('a name with a lone surrogate is refused naming the field, and nothing is stored (it was stored as U+FFFD under an ack)', async (t) => {
  const post = (body: string) => http<{ status: number; message: string }>(svc.url, '/api/v1/ingest', {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': token }, body,
  });
  const r = await post('{"data":[{"kind":"sport","si":777001,"na":"Bad \\ud800 name"}]}');
  t.same([r.status, r.body], [400, { status: 0, message: 'item 0 (sport 777001): na must not contain lone surrogates (an unpaired \\ud800 to \\udfff)' }]);
  const reader = await createKey(svc.pool, 'reader', 'subscriber');
  await keyLive(svc.url, reader.token);
  const sports = await http<{ si: number }[]>(svc.url, '/api/v1/sports', { headers: { 'x-api-key': reader.token } });
  t.notOk(sports.body.some((s) => s.si === 777001), 'the sport was not stored');
  const paired = await post('{"data":[{"kind":"sport","si":777002,"na":"Paired \\ud83c\\udfcf"}]}');
  t.equal(paired.status, 200, 'a surrogate pair (an emoji) is a name like any other');
});

t.test('the handshake announces the bounds a connection keeps, as configured; a batch past one is acked status 0 with code LIMIT, in its place', async (t) => {
  const small = await startTestService(t, { DEMO_DATA: 'off', INGEST_MAX_IN_FLIGHT: '2', INGEST_QUEUE_BYTES: '4096', INGEST_KEY_QUEUE_BYTES: '65536', INGEST_MAX_ITEMS: '7', MAX_BODY_BYTES: '65536' });
  const ws = new WebSocket(`${small.url.replace(/^http/, 'ws')}/ingest`, ['odds.v1.json']);
  t.teardown(() => ws.close());
  const headers = new Promise<Record<string, unknown>>((ok) => ws.once('upgrade', (res) => ok(res.headers)));
  await new Promise((ok) => ws.once('open', ok));
  t.match(await headers, {
    // The byte bounds as what may be on the wire: a sixteenth, the most a byte of JSON is counted once read.
    'x-ingest-max-in-flight': '2', 'x-ingest-queue-bytes': '256', 'x-ingest-key-queue-bytes': '4096', 'x-ingest-max-items': '7', 'x-ingest-max-message-bytes': '65536',
  });
  const acks: Record<string, unknown>[] = [];
  ws.on('message', (data: Buffer) => acks.push(JSON.parse(data.toString()) as Record<string, unknown>));
  // Sent in one turn: the first (a transaction) is still running when the others arrive, so the third is past the two allowed
  // (and the fourth: refusals keep their place up to twice the bound).
  for (let id = 1; id <= 4; id++) ws.send(JSON.stringify({ id, data: [{ kind: 'sport', si: 880 + id, na: `Sport ${id}`, a: true }] }));
  await waitFor(() => acks.length === 4, () => `four acks (${acks.length})`);
  t.same(acks.map((a) => a.id), [1, 2, 3, 4], 'every batch answered in the order sent');
  const limited = acks.filter((a) => a.status === 0);
  t.ok(limited.length > 0, `${limited.length} refused for the bound`);
  t.same(limited.map((a) => [a.code, a.message]), limited.map(() => ['LIMIT', '2 batches are already in flight on this connection; wait for their acks before sending more (this batch was not applied)']));
  t.same(acks.filter((a) => a.status === 1).map((a) => Object.keys(a)), acks.filter((a) => a.status === 1).map(() => ['op', 'id', 'status', 'message']), 'an ack that took its batch carries no code');
});
