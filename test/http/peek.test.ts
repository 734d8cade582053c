/**
 * What the edge reads of a request before reading it: a socket message's id from its first bytes
 * only (to refuse it unread with its id), and a request's framing (RFC 9112: a Content-Length
 * given twice with different values, or a Host given twice, is refused before the body is read).
 */
import t from 'tap';
import type { HttpRequest } from 'uWebSockets.js';
import { framingError } from '../../src/http/framing.js';
import { peekBatchId, peekId } from '../../src/http/peek.js';
import { encodeIngestProto } from '../../src/odds/ingest-codec.js';
import { encodeClientProto } from '../../src/odds/client-codec.js';

const text = (s: string) => new Uint8Array(Buffer.from(s)).buffer;

t.test('a JSON id as the first key or right after op; 0 when it is elsewhere or too large', async (t) => {
  t.equal(peekId(text('{"id":42,"op":"ping"}'), false), 42);
  t.equal(peekId(text(' { "op" : "subscribe" , "id" : 7 , "mids":["x"]}'), false), 7);
  t.equal(peekId(text(`{"op":"subscribe","mids":["${'x'.repeat(100_000)}"],"id":9}`), false), 0, 'past the first bytes: not looked for');
  t.equal(peekId(text('{"id":99999999999}'), false), 0, 'past 32 bits');
  t.equal(peekId(text('not json'), false), 0);
});

t.test('a protobuf id among the first fields; a message cut short gives 0', async (t) => {
  const bytes = encodeClientProto({ op: 'subscribe', id: 1234, mids: ['1.5'] });
  t.equal(peekId(new Uint8Array(bytes).buffer, true), 1234);
  t.equal(peekId(new Uint8Array(bytes.subarray(0, 1)).buffer, true), 0);
  t.equal(peekId(new ArrayBuffer(0), true), 0);
});

t.test('a protobuf IngestBatch\'s id past its items, skipped by their length; 0 past the fields looked at, or cut short', async (t) => {
  const items = Array.from({ length: 3 }, (_, i) => ({ kind: 'stale', mid: `1.${i}`, why: 'late' }));
  const bytes = encodeIngestProto(items, 4_000_000_000);
  t.equal(peekBatchId(new Uint8Array(bytes).buffer, 4), 4_000_000_000, 'after three items');
  t.equal(peekBatchId(new Uint8Array(bytes).buffer, 3), 0, 'not among the first three fields');
  t.equal(peekBatchId(new Uint8Array(encodeIngestProto(items)).buffer, 10), 0, 'none given');
  t.equal(peekBatchId(new Uint8Array(bytes.subarray(0, bytes.length - 3)).buffer, 10), 0, 'cut short');
});

/** A request with these headers, as uWS hands them over. */
const request = (headers: [string, string][]) => ({
  getHeader: (name: string) => headers.find(([n]) => n === name)?.[1] ?? '',
  forEach: (each: (name: string, value: string) => void) => headers.forEach(([n, v]) => each(n, v)),
}) as unknown as HttpRequest;

t.test('framing: one Content-Length, or several that agree, and one Host; anything else a 400 saying why', async (t) => {
  t.equal(framingError(request([['host', 'a'], ['content-length', '5']])), undefined);
  t.equal(framingError(request([['host', 'a'], ['content-length', '5'], ['content-length', '5']])), undefined, 'repeated, the same value');
  t.match(framingError(request([['host', 'a'], ['content-length', '5'], ['content-length', '6']])), { code: 'BAD_PARAM', message: /Content-Length is given more than once with different values/ });
  t.match(framingError(request([['host', 'a'], ['host', 'b'], ['content-length', '1']])), { message: /Host is given more than once/ });
});
