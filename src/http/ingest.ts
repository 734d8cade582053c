import type { TemplatedApp } from 'uWebSockets.js';
import { errors, known } from '../errors.js';
import { decodeIngestProto, encodeJson, encodeProto } from '../odds/codec.js';
import type { Ingest, IngestResult } from '../ingest/ingest.js';
import type { Logger } from '../log.js';
import { parseJson, parseQuery, sendError } from './request.js';
import type { Auth } from '../auth/auth.js';
import type { SocketRegistry } from '../auth/sockets.js';
import type { Router } from './router.js';

const JSON_TYPE = 'application/json';
const PROTO_TYPE = 'application/x-protobuf';

interface Batch {
  id: number;
  data: unknown;
}

/** A batch in either format: `{"id"?, "data": [...]}` as JSON, or an IngestBatch as protobuf. */
function decodeBatch(bytes: Uint8Array, binary: boolean): Batch {
  if (binary) {
    const decoded = decodeIngestProto(bytes);
    if ('error' in decoded) throw errors.badBody(decoded.error);
    return { id: 0, data: decoded.data };
  }
  const body = parseJson(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw errors.badBody('must be {"data": [item, ...]}');
  const { id, data } = body as { id?: unknown; data?: unknown };
  return { id: Number.isSafeInteger(id) && (id as number) >= 0 && (id as number) <= 0xffffffff ? (id as number) : 0, data };
}

const summary = (r: IngestResult): string => `Ingested ${r.count} item${r.count === 1 ? '' : 's'}`;

interface PublisherState {
  format: 'json' | 'proto';
  /** Set on close: an ack for a batch still committing must not touch a closed socket. */
  closed: boolean;
  keyId: string;
}

/**
 * Publishers' routes. Both take the same items; the socket form answers
 * each message with an ack in the socket's format, echoing the batch `id`.
 */
export function registerIngest(app: TemplatedApp, router: Router, ingest: Ingest, auth: { auth: Auth; sockets: SocketRegistry; gate(): string | undefined }, maxBodyBytes: number, log: Logger): void {
  router.post('/api/v1/ingest', [JSON_TYPE, PROTO_TYPE], maxBodyBytes, async (body, type) => {
    const batch = decodeBatch(body, type === PROTO_TYPE);
    return JSON.stringify({ status: 1, message: summary(await ingest.accept(batch.data)) });
  }, 'publisher');

  app.ws<PublisherState>('/ingest', {
    maxPayloadLength: maxBodyBytes,
    idleTimeout: 60,
    sendPingsAutomatically: true,
    upgrade: (res, req, context) => {
      let keyId: string;
      try {
        const closed = auth.gate();
        if (closed) throw errors.notReady(closed);
        keyId = auth.auth.authenticate(req.getHeader('x-api-key') || parseQuery(req.getQuery()).get('key') || undefined, 'publisher').keyId;
        const refused = auth.sockets.refuse(keyId);
        if (refused) throw refused;
      } catch (err) {
        return sendError(res, known(err, log, 'publisher upgrade'));
      }
      const offered = req.getHeader('sec-websocket-protocol').split(',').map((p) => p.trim());
      const proto = offered.includes('odds.v1.proto');
      res.upgrade<PublisherState>({ format: proto ? 'proto' : 'json', closed: false, keyId }, req.getHeader('sec-websocket-key'),
        proto ? 'odds.v1.proto' : offered.includes('odds.v1.json') ? 'odds.v1.json' : '', req.getHeader('sec-websocket-extensions'), context);
    },
    message: (ws, data, isBinary) => {
      const state = ws.getUserData();
      const reply = (id: number, status: 0 | 1, message: string) => {
        if (state.closed) return;
        const ack = { op: 'ack' as const, id, status, message };
        ws.cork(() => (state.format === 'proto' ? ws.send(encodeProto(ack), true) : ws.send(encodeJson(ack), false)));
      };
      let batch: Batch;
      try {
        // The message buffer is only valid during this callback: decode it now.
        batch = decodeBatch(new Uint8Array(data), isBinary);
      } catch (err) {
        return reply(0, 0, known(err, log, 'ingest').message);
      }
      ingest.accept(batch.data).then(
        (r) => reply(batch.id, 1, summary(r)),
        (err) => reply(batch.id, 0, known(err, log, 'ingest').message),
      );
    },
    open: (ws) => auth.sockets.add(ws.getUserData().keyId, ws),
    close: (ws) => {
      const state = ws.getUserData();
      state.closed = true;
      auth.sockets.remove(state.keyId, ws);
    },
  });
}
