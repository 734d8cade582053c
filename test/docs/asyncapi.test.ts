/**
 * docs/asyncapi.yaml: it parses with the AsyncAPI parser without findings, it names what the code
 * uses (subprotocols, close codes, heartbeat bounds, protobuf messages of proto/odds.proto), and
 * the real frames of both sockets, in both formats, match its JSON schemas.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { Parser, fromFile } from '@asyncapi/parser';
import AjvModule from 'ajv';
import protobuf from 'protobufjs';
import { parse as parseYaml } from 'yaml';
import WebSocket from 'ws';
import { postJson, startTestService } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';
import { Client, image, withTraded } from '../helpers/ws.js';
import { CLOSE } from '../../src/errors.js';
import { SUBPROTOCOLS } from '../../src/http/upgrade.js';
import { HEARTBEAT, type ClientMessage, type ServerMessage } from '../../src/odds/messages.js';
import { decodeServerJson, decodeServerProto } from '../../src/odds/codec.js';
import { encodeIngestProto } from '../../src/odds/ingest-codec.js';

const FILE = new URL('../../../docs/asyncapi.yaml', import.meta.url).pathname;
const PROTO = new URL('../../../proto/odds.proto', import.meta.url).pathname;
type Obj = Record<string, any>;
const doc = parseYaml(readFileSync(FILE, 'utf8')) as Obj;

// AsyncAPI schemas are JSON Schema draft 07, ajv's default; the document's refs point into its components.
const Ajv = AjvModule.default ?? AjvModule;
const ajv = new Ajv({ strict: true, strictRequired: false, allErrors: true });
ajv.addSchema(JSON.parse(JSON.stringify({ $id: 'asyncapi', definitions: doc.components.schemas }).replaceAll('#/components/schemas/', 'asyncapi#/definitions/')));
const errorsOf = (schema: string, value: unknown): string[] => {
  const validate = ajv.getSchema(`asyncapi#/definitions/${schema}`)!;
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
};
/** The JSON schema of the message a channel documents for an op. */
const schemaOf = (channel: string, op: string): string => {
  const ref = doc.channels[channel].messages[op === 'batch' ? 'batch' : op].$ref as string;
  return (doc.components.messages[ref.split('/').pop()!].payload.$ref as string).split('/').pop()!;
};

t.test('parses with the AsyncAPI parser with no errors or warnings', async (t) => {
  const { document, diagnostics } = await fromFile(new Parser(), FILE).parse();
  t.ok(document, 'a document');
  t.same(diagnostics.filter((d) => d.severity <= 1).map((d) => `${d.code}: ${d.message} at ${d.path.join('.')}`), []);
  t.equal(document!.version(), '3.1.0');
  t.same(document!.channels().all().map((c) => c.address()).sort(), ['/ingest', '/ws']);
});

t.test('names the subprotocols, close codes and heartbeat bounds the code uses', async (t) => {
  t.same(doc.info['x-subprotocols'], Object.keys(SUBPROTOCOLS).sort());
  for (const channel of ['feed', 'ingest']) t.same(doc.channels[channel].bindings.ws.headers.properties['Sec-WebSocket-Protocol'].enum, doc.info['x-subprotocols']);
  t.same(doc.info['x-close-codes'], Object.fromEntries(Object.values(CLOSE).map((c) => [String(c.code), c.reason])), 'each code with its reason');
  const hb = doc.channels.feed.bindings.ws.query.properties.hb;
  t.same([hb.minimum, hb.maximum, hb.default], [HEARTBEAT.min, HEARTBEAT.max, HEARTBEAT.default]);
});

t.test('every protobuf message it names is in proto/odds.proto', async (t) => {
  const root = protobuf.loadSync(PROTO);
  const server = root.lookupType('odds.v1.ServerMessage');
  const named = Object.entries(doc.components.messages as Obj).filter(([, m]) => m['x-protobuf']);
  t.equal(named.length, 15, 'one per JSON message');
  for (const [id, m] of named) {
    const pb = m['x-protobuf'] as { file: string; message: string; oneof?: string; type?: string };
    t.equal(pb.file, 'proto/odds.proto', id);
    t.ok(root.lookupType(pb.message), `${id}: ${pb.message}`);
    t.equal(m.contentType, 'application/x-protobuf', `${id} is binary`);
    if (pb.oneof) t.equal(server.fields[pb.oneof]?.resolve().resolvedType?.fullName, `.${pb.type}`, `${id}: ServerMessage.${pb.oneof} is ${pb.type}`);
  }
  t.same(Object.keys(server.oneofs.msg.oneof).length, 11, 'every server message is documented');
});

for (const format of ['json', 'proto'] as const) {
  t.test(`${format}: every frame of a /ws session matches its documented schema`, async (t) => {
    const svc = await startTestService(t, { FEED_STALE_MS: '300' });
    const ingest = (...data: Record<string, unknown>[]) => postJson(svc.url, '/api/v1/ingest', { data });
    const c = await Client.connect(svc.url, { format, query: 'hb=500' });
    t.teardown(() => c.close());
    await c.next((f) => f.op === 'feed' && f.status === 'STALE');
    const requests: Omit<ClientMessage, 'id'>[] = [
      { op: 'subscribe', mids: ['1.200001001', '1.200001002'] },
      { op: 'subscribe', eids: [30000001], depth: 1, conflate: 100 },
      { op: 'subscribe', mids: ['1.200001001'], since: { epoch: 'x', seqs: { '1.200001001': 1 } } },
      { op: 'unsubscribe', eids: [30000001] },
      { op: 'subscribe', mids: ['1.200001001', '1.200001002'] },
      { op: 'subscribe', eids: [30000001], tys: ['match-odd', 'session'], bts: ['ODDS', 'LINE'] },
      { op: 'unsubscribe', eids: [30000001] },
      { op: 'subscribe', mids: ['1.200001001', '1.200001002'] },
      { op: 'subscribe', mids: ['1.200001001'], delta: true },
      { op: 'ping' },
    ];
    for (const [i, r] of requests.entries()) {
      t.same(errorsOf(r.op === 'ping' ? 'Ping' : r.op === 'subscribe' ? 'Subscribe' : 'Unsubscribe', { ...r, id: i + 1 }), [], `request ${i + 1} as documented`);
      t.equal((await c.request(r)).status, 1, `request ${i + 1} accepted`);
    }
    const refused = { op: 'subscribe' as const, mids: [] };
    t.not(errorsOf('Subscribe', { ...refused, id: 99 }).length, 0, 'the schema refuses a request naming nothing');
    t.equal((await c.request(refused)).status, 0, 'and so does the server');
    // The second image moves one level: a delta.
    const moved = withTraded(image('1.200001001'));
    (moved.r as { b: number[][] }[])[0].b[0][1] = 99;
    const terms = { kind: 'terms', mid: '1.200001001', bd: 5, tip: true, bt: 'ODDS', nw: 1, cc: 'IN', mbr: 5, r: [{ rid: 101, st: 'ACTIVE', af: 40.5 }, { rid: 102, st: 'REMOVED', af: 59.5, rd: 1 }] };
    const settled = { kind: 'result', mid: '1.200001001', res: '101', cert: 'provisional', at: 2, rs: [{ rid: 101, st: 'WINNER', dh: 0.5 }, { rid: 102, st: 'REMOVED', vf: 1 }] };
    const stop = { kind: 'suspend', eid: 30000001, sr: 'goal', ts: Date.now() };
    t.same(errorsOf('IngestBatch', { data: [terms, settled, stop] }), [], 'terms, a settlement and a bet stop as the document describes them');
    await ingest(withTraded(image('1.200001001')), moved, { kind: 'market', mid: '1.200001001', s: false }, terms, settled);
    // Stamped after the images it suspends: a stop older than a market's newest image leaves it as it is.
    await ingest({ ...stop, ts: Date.now() });
    await c.next((f) => f.op === 'delta' && f.sr === 'goal');
    await ingest({ kind: 'stale', mid: '1.200001001', why: 'late' });
    await c.next((f) => f.op === 'freshness' && !f.live);
    await ingest(withTraded(image('1.200001001')));
    await c.next((f) => f.op === 'freshness' && f.live);
    await ingest({ kind: 'market', mid: '1.200001002', go: true });
    await c.next((f) => f.op === 'unsubscribed');
    await c.next((f) => f.op === 'feed' && f.status === 'OK');
    await c.next((f) => f.op === 'hb');
    const ops = new Set<string>();
    for (const f of c.frames) {
      ops.add(f.op);
      t.same(errorsOf(schemaOf('feed', f.op), f), [], `${f.op} frame as documented`);
    }
    t.same([...ops].sort(), ['ack', 'delta', 'feed', 'freshness', 'hb', 'market', 'odds', 'result', 'unsubscribed'], 'every kind of frame was seen');
  });

  t.test(`${format}: /ingest batches and acks match their documented schemas`, async (t) => {
    const svc = await startTestService(t);
    const ws = new WebSocket(svc.url.replace(/^http/, 'ws') + '/ingest', [`odds.v1.${format}`]);
    t.teardown(() => ws.close());
    await new Promise((ok, fail) => ws.once('open', ok).once('error', fail));
    const acks: ServerMessage[] = [];
    ws.on('message', (data: Buffer, binary: boolean) => acks.push(binary ? decodeServerProto(new Uint8Array(data)) : decodeServerJson(data.toString())));
    const batch = { id: 7, data: [withTraded(image('1.200001001')), { kind: 'market', mid: '1.200001001', s: true }] };
    t.same(errorsOf('IngestBatch', batch), [], 'the batch sent is one the document describes');
    const partly = [{ kind: 'odds', mid: 'nope', ts: 1, st: 'OPEN', ip: false, r: [] }, { kind: 'stale', mid: '1.200001001', why: 'late' }, { kind: 'stale', mid: '1.200001002', why: 'unreliable' }];
    t.same(errorsOf('IngestBatch', { data: partly }), [], 'stale items as the document describes them');
    const bad = [{ kind: 'market', mid: 'not a market id' }];
    for (const [id, data] of [[7, batch.data], [8, partly], [9, []], [10, bad]] as const) ws.send(format === 'json' ? JSON.stringify({ id, data }) : encodeIngestProto([...data]));
    await waitFor(() => acks.length >= 4, () => `four acks, got ${JSON.stringify(acks)}`);
    t.match(acks, [
      { op: 'ack', status: 1, message: 'Ingested 2 items' },
      { op: 'ack', status: 1, message: 'Ingested 2 items; refused 1', refused: [{ i: 0, mid: 'nope' }] },
      { op: 'ack', status: 1, message: 'Ingested 0 items' },
      { op: 'ack', status: 0, code: 'ITEM_REJECTED' },
    ], 'applied; odds refused alone; a heartbeat; a bad reference item refusing its batch, with its code');
    for (const a of acks) t.same(errorsOf(schemaOf('ingest', a.op), a), [], 'ack as documented');
  });
}

t.test('a notice frame, in both formats, matches its documented schema', async (t) => {
  const svc = await startTestService(t, { WS_MAX_MARKETS: '1' });
  for (const format of ['json', 'proto'] as const) {
    const c = await Client.connect(svc.url, { format });
    t.teardown(() => c.close());
    t.equal((await c.request({ op: 'subscribe', mids: ['1.200001001'] })).status, 1);
    t.equal((await postJson(svc.url, '/api/v1/subscribe', { data: ['1.200001002'] })).status, 200);
    const notice = await c.next((f) => f.op === 'notice');
    t.same(errorsOf(schemaOf('feed', 'notice'), notice), [], `${format}: notice as documented`);
    await postJson(svc.url, '/api/v1/unsubscribe', { data: ['1.200001002'] });
  }
});
