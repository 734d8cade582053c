import type { TemplatedApp, WebSocket } from 'uWebSockets.js';
import { CLOSE, errors, known } from '../errors.js';
import type { Auth } from '../auth/auth.js';
import { decodeIngestProto } from '../odds/ingest-codec.js';
import type { Format } from '../odds/book.js';
import { encodeFor } from '../odds/codec.js';
import { refusal, type AckMessage } from '../odds/messages.js';
import type { PublisherSocket } from '../hub/hub.js';
import { refuseRead, type Ingest, type IngestResult, type PublisherKey } from '../ingest/ingest.js';
import { MOST_HELD_PER_JSON_BYTE, batchOf, readBytes, type Batch } from '../ingest/batch.js';
import { Lane, type KeyQueues } from '../ingest/lane.js';
import { limitHeaders } from '../ingest/limits.js';
import { LIVENESS, parseLiveness, type Feeder, type Freshness } from '../relay/freshness.js';
import { parseJson } from './request.js';
import { peekBatchId, peekId } from './peek.js';
import type { Router } from './router.js';
import { upgrade, type UpgradeDeps } from './upgrade.js';

const JSON_TYPE = 'application/json';
const PROTO_TYPE = 'application/x-protobuf';

/**
 * A batch in either format, `{"id"?, "data": [...]}` as JSON or an IngestBatch as protobuf
 * (counted before it is decoded), read into the domain's types by `Ingest.read`.
 */
function readBatch(bytes: Uint8Array, binary: boolean, { ingest, maxItems }: Pick<IngestRoutesDeps, 'ingest' | 'maxItems'>): Batch {
  if (binary) {
    // A batch whose items cannot be read is still answered under its id, when it could be read.
    const { id = 0, ...decoded } = decodeIngestProto(bytes, maxItems);
    return batchOf(id, bytes.byteLength, 'error' in decoded ? { refusal: errors.badBody(decoded.error) } : ingest.read(decoded.data));
  }
  const body = parseJson(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw errors.badBody('must be {"data": [item, ...]}');
  const { id = 0, data } = body as { id?: unknown; data?: unknown };
  // An id the ack could not echo would leave its publisher unable to match the ack: refused, its
  // items read only for the markets they name.
  const echoable = Number.isSafeInteger(id) && (id as number) >= 0 && (id as number) <= 0xffffffff;
  const items = ingest.read(data);
  if (echoable) return batchOf(id as number, bytes.byteLength, items);
  const refusal = errors.badBody('id must be a whole number from 0 to 4294967295 (the ack echoes it)');
  return batchOf(0, bytes.byteLength, 'refusal' in items ? { ...items, refusal } : refuseRead(refusal, items, []));
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

/** `?replay=`: 1 when the connection publishes a recording, whose source times are its own (docs/ingest.md#source-time). */
function replaying(raw: string | undefined): boolean {
  if (raw === undefined || raw === '0') return false;
  if (raw === '1') return true;
  throw errors.badParam('replay', 'must be 1 (the connection replays a recording) or 0');
}

/** A publisher's API key as ingest checks it while keys are in force: live while this pod holds it. */
class LiveKey implements PublisherKey {
  constructor(private readonly auth: Auth, readonly id: string) {}

  live(): boolean {
    return this.auth.live(this.id);
  }

  revoked(): void {
    this.auth.drop(this.id);
  }
}

/**
 * One `/ingest` connection from open, as the hub holds it: its batches in order (its lane,
 * through which the hub revokes and drains it), and the connection as freshness sees it.
 */
class IngestConnection implements PublisherSocket {
  /** Set by the hub once the socket closed: an ack for a batch still running is dropped then. */
  closed = false;
  readonly keyId: string;
  readonly lane: Lane;
  readonly feeder: Feeder;
  private readonly format: Format;
  private readonly maxUnreadBytes: number;

  constructor(readonly conn: WebSocket<PublisherData>, private readonly deps: IngestRoutesDeps) {
    const { keyId, format, key, liveMs, replay } = conn.getUserData();
    this.keyId = keyId;
    this.format = format;
    this.feeder = deps.freshness.connect(liveMs, replay);
    this.maxUnreadBytes = deps.maxUnreadBytes;
    const limits = { maxInFlight: deps.maxInFlight, maxBytes: deps.maxQueuedBytes };
    this.lane = new Lane({ ingest: deps.ingest, by: { key, feeder: this.feeder }, limits, keys: deps.keyQueues, keyId });
  }

  revoke(): Promise<void> {
    return this.lane.revoke(errors.keyRevoked());
  }

  drain(): Promise<void> {
    return this.lane.close();
  }

  /** An ack or a refusal, in the socket's format. */
  reply(ack: AckMessage): void {
    if (this.closed) return;
    // An ack is never dropped (uWS would drop one past its 64 KiB default, and the publisher would
    // wait for it for ever): a publisher leaving more acks unread than a socket may hold is closed
    // instead, and knows to send again what was not acked. Checked before sending, so one ack of
    // any size (a long refused list) always goes out.
    const unread = this.conn.getBufferedAmount();
    if (unread > this.maxUnreadBytes) {
      this.closed = true;
      this.deps.log.warn('closing publisher that leaves its acks unread', { key: this.keyId, unreadBytes: unread, limit: this.maxUnreadBytes });
      return this.conn.end(CLOSE.SLOW.code, CLOSE.SLOW.reason);
    }
    this.conn.cork(() => this.conn.send(encodeFor(this.format, ack), this.format === 'proto'));
  }
}

interface PublisherData {
  keyId: string;
  format: Format;
  key: PublisherKey | undefined;
  liveMs: number;
  replay: boolean;
  /** From open: the connection's lane and freshness, and the socket as the hub holds it. */
  socket?: IngestConnection;
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
  /** Bytes of acks a connection may leave unread before it is closed (4008). */
  maxUnreadBytes: number;
  /** Bytes each key has queued, across its connections and posts. */
  keyQueues: KeyQueues;
}

/**
 * Publishers' routes. Both take the same items. The socket form answers each
 * message with an ack in the socket's format, echoing the batch `id`, and
 * applies a connection's batches in the order sent (ingest/lane.ts). The hub
 * holds the sockets: it revokes and drains them through their lanes. Only a
 * batch ingest accepts is a sign of the publisher's life (ingest/ingest.ts).
 */
export function registerIngest(app: TemplatedApp, router: Router, deps: IngestRoutesDeps): void {
  const { ingest, log, auth } = deps;
  /** With keys in force, a batch takes effect only while its key is live (ingest/ingest.ts). */
  const keyOf = (keyId: string): PublisherKey | undefined => (auth.enabled ? new LiveKey(auth, keyId) : undefined);
  /**
   * The bounds a connection keeps, announced on every handshake so publishers size their
   * pipelines by them: the byte bounds as what may be on the wire, since a batch is counted at
   * what it holds once read (at most MOST_HELD_PER_JSON_BYTE a byte of JSON).
   */
  const announced = limitHeaders({
    maxInFlight: deps.maxInFlight, maxItems: deps.maxItems, maxMessageBytes: deps.maxBodyBytes,
    queueBytes: Math.floor(deps.maxQueuedBytes / MOST_HELD_PER_JSON_BYTE), keyQueueBytes: Math.floor(deps.keyQueues.max / MOST_HELD_PER_JSON_BYTE),
  });

  router.post('/api/v1/ingest', [JSON_TYPE, PROTO_TYPE], deps.maxBodyBytes, async (body, type, who) => {
    const feeder = deps.freshness.rest(who.keyId);
    const batch = readBatch(body, type === PROTO_TYPE, deps);
    const full = deps.keyQueues.spend(who.keyId, batch.bytes);
    if (full) throw full;
    try {
      return JSON.stringify(answer(await ingest.accept(batch.items, { key: keyOf(who.keyId), feeder })));
    } finally {
      deps.keyQueues.give(who.keyId, batch.bytes);
    }
  }, 'publisher');

  app.ws<PublisherData>('/ingest', {
    maxPayloadLength: deps.maxBodyBytes,
    // Unbounded here: reply bounds the acks a publisher leaves unread, closing rather than dropping.
    maxBackpressure: 0,
    idleTimeout: 60,
    sendPingsAutomatically: true,
    upgrade: (res, req, context) => upgrade(res, req, context, deps, 'publisher', ({ who, format, query }): PublisherData => (
      { keyId: who.keyId, format, key: keyOf(who.keyId), liveMs: liveness(query.get('live')), replay: replaying(query.get('replay')) }
    ), announced),
    open: (ws) => {
      deps.hub.open((ws.getUserData().socket = new IngestConnection(ws, deps)));
    },
    message: (ws, data, isBinary) => {
      const socket = ws.getUserData().socket!;
      let batch: Batch;
      // The message buffer is only valid during this callback: read it now, unless the lane's
      // bounds refuse it, when it is left unread (its id peeked) and refused in its place.
      const unread = socket.lane.boundRefusal(readBytes(data.byteLength));
      try {
        batch = unread
          ? { id: isBinary ? peekBatchId(data, deps.maxItems + 1) : peekId(data, false), bytes: data.byteLength, items: { refusal: unread } }
          : readBatch(new Uint8Array(data), isBinary, deps);
      } catch (err) {
        // A message that is no batch is refused in its place too, so acks keep the order sent.
        batch = { id: 0, bytes: data.byteLength, items: { refusal: known(err, log, 'ingest') } };
      }
      socket.lane.submit(batch).then(
        (result) => socket.reply({ op: 'ack', id: batch.id, ...answer(result) }),
        (err: unknown) => {
          const refused = known(err, log, 'ingest');
          socket.reply({ ...refusal(batch.id, refused), code: refused.code });
        },
      );
    },
    close: (ws, code) => {
      const { socket } = ws.getUserData();
      socket!.feeder.close();
      deps.hub.close(socket!, code);
    },
  });
}
