import type { TemplatedApp, WebSocket } from 'uWebSockets.js';
import { uwsBuild } from './uws.js';
import { CLOSE, errors, type ServiceError } from '../errors.js';
import { decodeClient } from '../odds/client-codec.js';
import { peekId } from './peek.js';
import { HEARTBEAT, parseHeartbeat, refusal, type ClientMessage } from '../odds/messages.js';
import type { Format } from '../odds/book.js';
import type { Broadcaster } from '../hub/broadcaster.js';
import { narrowingOf, type MarketsRequest, type SocketSubscriptions, type SubscribeRequest } from '../hub/socket-subscriptions.js';
import { Session } from '../hub/session.js';
import type { Sweeper } from '../hub/sweep.js';
import type { AuthMetrics } from '../metrics/auth.js';
import type { TokenBucket } from '../lib/token-bucket.js';
import { Budgets, type BudgetLimits } from './budget.js';
import { upgrade, type UpgradeDeps } from './upgrade.js';
import type { Admission } from './admission.js';

export interface WsLimits extends BudgetLimits {
  maxMessageBytes: number;
  idleTimeoutS: number;
  /** permessage-deflate for clients that offer it; uWS then deflates every frame once per socket. */
  compression: boolean;
}

export interface WsDeps extends UpgradeDeps {
  bc: Broadcaster;
  socketSubs: SocketSubscriptions;
  sweeper: Sweeper;
  metrics: AuthMetrics;
  limits: WsLimits;
  admission: Admission;
}

/** The socket's data: who it is from the handshake, the session once open, and the transport's own rate bucket. */
interface WsData {
  keyId: string;
  client: string;
  format: Format;
  hbMs: number;
  bucket?: TokenBucket;
  /** Messages refused for rate in a row; reset by one that is read. */
  strikes: number;
  /** Whom the subscribe rate limit counts (admission.ts): the API key with keys in force, else the address. */
  source: string;
  session?: Session;
}

let nextId = 1;

/** Messages refused for rate in a row after which a socket is closed (4029): a client that does not back off. */
const PERSISTENT = 100;

/** The markets a decoded request names, in the hub's words (decoded subscribe and unsubscribe requests carry all three lists). */
const marketsRequest = (msg: ClientMessage): MarketsRequest =>
  ({ requestId: msg.id, marketIds: msg.mids ?? [], eventIds: msg.eids ?? [], sportIds: msg.sis ?? [] });

/** A decoded subscribe in the hub's words: what the protocol leaves out is its default (all levels, every update, images, no narrowing). */
const subscribeRequest = (msg: ClientMessage): SubscribeRequest =>
  ({ ...marketsRequest(msg), depth: msg.depth ?? 0, conflateMs: msg.conflate ?? 0, deltas: msg.delta === true, resume: msg.since, narrowing: narrowingOf(msg) });

function heartbeat(raw: string | undefined): number {
  if (raw === undefined) return HEARTBEAT.default;
  const hb = parseHeartbeat(raw);
  if (hb === undefined) throw errors.badParam('hb', `must be a whole number of milliseconds from ${HEARTBEAT.min} to ${HEARTBEAT.max}`);
  return hb;
}

/**
 * The subscriber socket route, `/ws`: the transport edge. It rate-limits
 * requests and decodes them into the hub's words, and leaves sockets' lives
 * to the hub (which tells the broadcaster, the sweep and the stored sets),
 * requests to SocketSubscriptions (which answers them) and backpressure to
 * the sweep.
 */
export function registerWs(app: TemplatedApp, deps: WsDeps): void {
  const { bc, hub, limits } = deps;
  const budgets = new Budgets(limits, hub);
  const refuse = (s: Session, id: number, err: ServiceError) => bc.send(s, refusal(id, err));

  const handle = (s: Session, msg: ClientMessage): void => {
    if (msg.op === 'ping') bc.send(s, { op: 'ack', id: msg.id, status: 1, message: 'pong' });
    else if (msg.op === 'subscribe') deps.socketSubs.subscribe(s, subscribeRequest(msg));
    else deps.socketSubs.unsubscribe(s, marketsRequest(msg));
  };

  app.ws<WsData>('/ws', {
    // uWS drops the connection above this; the documented limit below it is answered with an ack.
    maxPayloadLength: Math.max(limits.maxMessageBytes * 4, 256 * 1024),
    // The sweep skips frames for a socket at its soft limit and closes it at the hard one. uWS's
    // own limit is off (0): it would drop frames silently, the close frame among them.
    maxBackpressure: 0,
    closeOnBackpressureLimit: 0,
    idleTimeout: limits.idleTimeoutS,
    compression: limits.compression ? uwsBuild.lib.SHARED_COMPRESSOR : uwsBuild.lib.DISABLED,
    sendPingsAutomatically: true,

    upgrade: (res, req, context) => upgrade(res, req, context, deps, 'subscriber', ({ who, format, query, source }) => {
      const hbMs = heartbeat(query.get('hb'));
      const refused = deps.admission.handshake(source) ?? budgets.refuseOpen(who.keyId);
      if (refused) throw refused;
      return { keyId: who.keyId, client: who.client, format, hbMs, strikes: 0, source };
    }),

    open: (ws: WebSocket<WsData>) => {
      const d = ws.getUserData();
      d.bucket = budgets.opened(d.keyId);
      hub.open((d.session = new Session(nextId++, d.keyId, d.client, d.format, d.hbMs, ws)));
    },

    // A message's cost is paid before it is read: a refused one is never decoded (its ack's id is peeked at its start).
    message: (ws: WebSocket<WsData>, data: ArrayBuffer, isBinary: boolean) => {
      const d = ws.getUserData();
      const s = d.session!;
      const refused = budgets.spend(d.keyId, d.bucket!, data.byteLength);
      if (refused) {
        deps.metrics.rateLimited.inc({ scope: refused.scope });
        if (++d.strikes > PERSISTENT) {
          budgets.abused(d.keyId);
          return hub.end(s, CLOSE.RATE);
        }
        return refuse(s, peekId(data, isBinary), refused.err);
      }
      d.strikes = 0;
      if (data.byteLength > limits.maxMessageBytes) return refuse(s, 0, errors.messageTooLarge(data.byteLength, limits.maxMessageBytes));
      const msg = decodeClient(data, isBinary, hub.maxMarkets);
      if ('error' in msg) return refuse(s, msg.id ?? 0, errors.badMessage(msg.error));
      const busy = msg.op === 'subscribe' ? deps.admission.subscribe(d.source) : undefined;
      if (busy) return refuse(s, msg.id, busy);
      handle(s, msg);
    },

    drain: (ws: WebSocket<WsData>) => deps.sweeper.drained(ws.getUserData().session!),
    close: (ws: WebSocket<WsData>) => {
      const d = ws.getUserData();
      hub.close(d.session!);
      budgets.closed(d.keyId);
    },
  });
}
