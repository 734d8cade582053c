import type { TemplatedApp, WebSocket } from 'uWebSockets.js';
import { CLOSE, errors, known } from '../errors.js';
import { decodeIngestProto } from '../odds/ingest-codec.js';
import type { Format } from '../odds/book.js';
import { encodeFor } from '../odds/codec.js';
import type { Closable } from '../hub/hub.js';
import type { Ingest, IngestResult, PublisherKey } from '../ingest/ingest.js';
import { Lane, type Outcome } from '../ingest/lane.js';
import { parseJson } from './request.js';
import type { Router } from './router.js';
import { upgrade, type UpgradeDeps } from './upgrade.js';

const JSON_TYPE = 'application/json';
const PROTO_TYPE = 'application/x-protobuf';

interface Batch {
  id: number;
  data: unknown;
}

/** A batch in either format: `{"id"?, "data": [...]}` as JSON, or an IngestBatch as protobuf (counted before it is decoded). */
function decodeBatch(bytes: Uint8Array, binary: boolean, maxItems: number): Batch {
  if (binary) {
    const decoded = decodeIngestProto(bytes, maxItems);
    if ('error' in decoded) throw errors.badBody(decoded.error);
    return { id: 0, data: decoded.data };
  }
  const body = parseJson(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw errors.badBody('must be {"data": [item, ...]}');
  const { id, data } = body as { id?: unknown; data?: unknown };
  return { id: Number.isSafeInteger(id) && (id as number) >= 0 && (id as number) <= 0xffffffff ? (id as number) : 0, data };
}

const summary = (r: IngestResult): string => `Ingested ${r.count} item${r.count === 1 ? '' : 's'}`;

interface PublisherData {
  keyId: string;
  format: Format;
  lane: Lane;
  /** What the hub closes on revocation: refuses the batches not yet started, then closes with 4003. */
  revocable?: Closable;
  /** Set on close: an ack for a batch still running must not touch a closed socket. */
  closed: boolean;
}

export interface IngestRoutesDeps extends UpgradeDeps {
  ingest: Ingest;
  /** Items per batch: a protobuf batch is counted against it before it is decoded. */
  maxItems: number;
  maxBodyBytes: number;
  /** Batches one `/ingest` connection may have in flight. */
  maxInFlight: number;
}

export interface Publishers {
  /** Shutdown: every connection stops taking batches, answers those it took, then closes with 1001. */
  drain(): Promise<void>;
}

/**
 * Publishers' routes. Both take the same items. The socket form answers each
 * message with an ack in the socket's format, echoing the batch `id`, and
 * applies a connection's batches in the order sent (ingest/lane.ts).
 */
export function registerIngest(app: TemplatedApp, router: Router, deps: IngestRoutesDeps): Publishers {
  const { ingest, log, auth } = deps;
  const open = new Set<WebSocket<PublisherData>>();
  /** With keys in force, a batch takes effect only while its key is live (ingest/ingest.ts). */
  const keyOf = (keyId: string): PublisherKey | undefined =>
    (auth.enabled ? { id: keyId, live: () => auth.live(keyId), revoked: () => auth.drop(keyId) } : undefined);

  router.post('/api/v1/ingest', [JSON_TYPE, PROTO_TYPE], deps.maxBodyBytes, async (body, type, who) => {
    const batch = decodeBatch(body, type === PROTO_TYPE, deps.maxItems);
    return JSON.stringify({ status: 1, message: summary(await ingest.accept(batch.data, { key: keyOf(who.keyId) })) });
  }, 'publisher');

  app.ws<PublisherData>('/ingest', {
    maxPayloadLength: deps.maxBodyBytes,
    idleTimeout: 60,
    sendPingsAutomatically: true,
    upgrade: (res, req, context) => upgrade(res, req, context, deps, 'publisher', ({ who, format }) => {
      const key = keyOf(who.keyId);
      return { keyId: who.keyId, format, lane: new Lane((data) => ingest.accept(data, { key }), deps.maxInFlight), closed: false };
    }),
    open: (ws) => {
      open.add(ws);
      const state = ws.getUserData();
      state.revocable = {
        end: (code, reason) => void state.lane.revoke(errors.keyRevoked()).then(() => {
          if (!state.closed) ws.end(code, reason);
        }),
      };
      deps.hub.addSocket(state.keyId, state.revocable);
    },
    message: (ws, data, isBinary) => {
      const state = ws.getUserData();
      const reply = (id: number, status: 0 | 1, message: string) => {
        if (state.closed) return;
        ws.cork(() => ws.send(encodeFor(state.format, { op: 'ack', id, status, message }), state.format === 'proto'));
      };
      let batch: Batch;
      try {
        // The message buffer is only valid during this callback: decode it now.
        batch = decodeBatch(new Uint8Array(data), isBinary, deps.maxItems);
      } catch (err) {
        return reply(0, 0, known(err, log, 'ingest').message);
      }
      state.lane.submit(batch.data, (o: Outcome) => {
        if ('ok' in o) reply(batch.id, 1, summary(o.ok));
        else reply(batch.id, 0, known(o.err, log, 'ingest').message);
      });
    },
    close: (ws) => {
      const state = ws.getUserData();
      state.closed = true;
      open.delete(ws);
      if (state.revocable) deps.hub.removeSocket(state.keyId, state.revocable);
    },
  });

  return {
    drain: async () => {
      await Promise.all([...open].map(async (ws) => {
        await ws.getUserData().lane.close();
        if (!ws.getUserData().closed) ws.end(CLOSE.GOING_AWAY, 'server shutting down');
      }));
    },
  };
}
