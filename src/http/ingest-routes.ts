import type { TemplatedApp } from 'uWebSockets.js';
import { errors, known } from '../errors.js';
import { decodeIngestProto } from '../odds/ingest-codec.js';
import type { Format } from '../odds/book.js';
import { encodeFor } from '../odds/codec.js';
import { refusal, type AckMessage } from '../odds/messages.js';
import type { Publisher } from '../hub/hub.js';
import { PublisherBatches, type Ingest, type IngestResult, type PublisherKey } from '../ingest/ingest.js';
import { Lane, type Batch, type KeyQueues } from '../ingest/lane.js';
import { LIVENESS, parseLiveness, type Feeder, type Freshness } from '../relay/freshness.js';
import { parseJson } from './request.js';
import { peekId } from './peek.js';
import type { Router } from './router.js';
import { upgrade, type UpgradeDeps } from './upgrade.js';

const JSON_TYPE = 'application/json';
const PROTO_TYPE = 'application/x-protobuf';

/** A batch in either format: `{"id"?, "data": [...]}` as JSON, or an IngestBatch as protobuf (counted before it is decoded). */
function decodeBatch(bytes: Uint8Array, binary: boolean, maxItems: number): Batch {
  if (binary) {
    const decoded = decodeIngestProto(bytes, maxItems);
    if ('error' in decoded) throw errors.badBody(decoded.error);
    return { id: 0, data: decoded.data, bytes: bytes.byteLength };
  }
  const body = parseJson(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw errors.badBody('must be {"data": [item, ...]}');
  const { id, data } = body as { id?: unknown; data?: unknown };
  return { id: Number.isSafeInteger(id) && (id as number) >= 0 && (id as number) <= 0xffffffff ? (id as number) : 0, data, bytes: bytes.byteLength };
}

/** A batch's answer, both routes: `Ingested 499 items; refused 1`, and the refused items when there are any. */
function answer(r: IngestResult): { status: 1; message: string; refused?: IngestResult['refused'] } {
  const message = `Ingested ${r.count} item${r.count === 1 ? '' : 's'}${r.refused.length ? `; refused ${r.refused.length}` : ''}`;
  return r.refused.length ? { status: 1, message, refused: r.refused } : { status: 1, message };
}

/** `?live=`: the connection's liveness interval (docs/ingest.md#liveness). */
function liveness(raw: string | undefined): number {
  if (raw === undefined) return LIVENESS.default;
  const ms = parseLiveness(raw);
  if (ms === undefined) throw errors.badParam('live', `must be a whole number of milliseconds from ${LIVENESS.min} to ${LIVENESS.max}`);
  return ms;
}

interface PublisherData {
  keyId: string;
  format: Format;
  key: PublisherKey | undefined;
  liveMs: number;
  /** From open: the batches in order, and the connection as freshness sees it. */
  lane?: Lane;
  feeder?: Feeder;
  /** The socket as the hub holds it, from open; its `closed` keeps an ack for a batch still running off a closed socket. */
  publisher?: Publisher;
}

export interface IngestRoutesDeps extends UpgradeDeps {
  ingest: Ingest;
  /** Each connection and each REST key is a publisher whose silence makes its markets stale. */
  freshness: Freshness;
  /** Items per batch: a protobuf batch is counted against it before it is decoded. */
  maxItems: number;
  maxBodyBytes: number;
  /** Batches one `/ingest` connection may have in flight, and their bytes. */
  maxInFlight: number;
  maxQueuedBytes: number;
  /** Bytes each key has queued, across its connections and posts. */
  keyQueues: KeyQueues;
}

/**
 * Publishers' routes. Both take the same items. The socket form answers each
 * message with an ack in the socket's format, echoing the batch `id`, and
 * applies a connection's batches in the order sent (ingest/lane.ts). The hub
 * holds the sockets: it revokes and drains them through their lanes. Every
 * message and every POST is a sign of the publisher's life, whatever it holds.
 */
export function registerIngest(app: TemplatedApp, router: Router, deps: IngestRoutesDeps): void {
  const { ingest, log, auth } = deps;
  /** With keys in force, a batch takes effect only while its key is live (ingest/ingest.ts). */
  const keyOf = (keyId: string): PublisherKey | undefined =>
    (auth.enabled ? { id: keyId, live: () => auth.live(keyId), revoked: () => auth.drop(keyId) } : undefined);

  router.post('/api/v1/ingest', [JSON_TYPE, PROTO_TYPE], deps.maxBodyBytes, async (body, type, who) => {
    const feeder = deps.freshness.rest(who.keyId);
    feeder.heard();
    const batch = decodeBatch(body, type === PROTO_TYPE, deps.maxItems);
    const full = deps.keyQueues.take(who.keyId, batch.bytes);
    if (full) throw full;
    try {
      return JSON.stringify(answer(await ingest.accept(batch.data, { key: keyOf(who.keyId), feeder })));
    } finally {
      deps.keyQueues.give(who.keyId, batch.bytes);
    }
  }, 'publisher');

  app.ws<PublisherData>('/ingest', {
    maxPayloadLength: deps.maxBodyBytes,
    idleTimeout: 60,
    sendPingsAutomatically: true,
    upgrade: (res, req, context) => upgrade(res, req, context, deps, 'publisher', ({ who, format, query }): PublisherData => (
      { keyId: who.keyId, format, key: keyOf(who.keyId), liveMs: liveness(query.get('live')) }
    )),
    open: (ws) => {
      const state = ws.getUserData();
      const feeder = (state.feeder = deps.freshness.connect(state.liveMs));
      const batches = new PublisherBatches(ingest, { key: state.key, feeder });
      const lane = (state.lane = new Lane(batches, { maxInFlight: deps.maxInFlight, maxBytes: deps.maxQueuedBytes }, deps.keyQueues, state.keyId));
      state.publisher = { keyId: state.keyId, conn: ws, closed: false, revoke: () => lane.revoke(errors.keyRevoked()), drain: () => lane.close() };
      deps.hub.open(state.publisher);
    },
    message: (ws, data, isBinary) => {
      const state = ws.getUserData();
      state.feeder!.heard();
      const reply = (ack: AckMessage) => {
        if (state.publisher!.closed) return;
        ws.cork(() => ws.send(encodeFor(state.format, ack), state.format === 'proto'));
      };
      let batch: Batch;
      try {
        // The message buffer is only valid during this callback: decode it now, unless the lane
        // is full, when it is refused unread (by its id, peeked) in its place.
        batch = state.lane!.full(data.byteLength)
          ? { id: isBinary ? 0 : peekId(data, false), data: undefined, bytes: data.byteLength }
          : decodeBatch(new Uint8Array(data), isBinary, deps.maxItems);
      } catch (err) {
        return reply(refusal(0, known(err, log, 'ingest')));
      }
      state.lane!.submit(batch).then(
        (result) => reply({ op: 'ack', id: batch.id, ...answer(result) }),
        (err: unknown) => reply(refusal(batch.id, known(err, log, 'ingest'))),
      );
    },
    close: (ws) => {
      const state = ws.getUserData();
      state.feeder!.close();
      deps.hub.close(state.publisher!);
    },
  });
}
