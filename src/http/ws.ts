import type { TemplatedApp, WebSocket } from 'uWebSockets.js';
import { uwsBuild } from './uws.js';
import { CLOSE, errors } from '../errors.js';
import { decodeClient } from '../odds/client-codec.js';
import { peekId } from './peek.js';
import { HEARTBEAT, parseHeartbeat, type ClientMessage } from '../odds/messages.js';
import type { Format } from '../odds/book.js';
import type { Broadcaster } from '../hub/broadcaster.js';
import type { SocketRequests } from '../hub/requests.js';
import { Session } from '../hub/session.js';
import type { Sweeper } from '../hub/sweep.js';
import type { Subscriptions } from '../subscriptions/subscriptions.js';
import type { AuthMetrics } from '../metrics/auth.js';
import type { TokenBucket } from '../lib/token-bucket.js';
import { Budgets, type BudgetLimits } from './budget.js';
import { upgrade, type UpgradeDeps } from './upgrade.js';
import type { Admission } from './admission.js';

export interface WsLimits extends BudgetLimits {
  maxMessageBytes: number;
  /** Most markets a socket may hold; also bounds `since.seqs` of a subscribe with filters. */
  maxMarkets: number;
  idleTimeoutS: number;
  /** permessage-deflate for clients that offer it; uWS then deflates every frame once per socket. */
  compression: boolean;
}

export interface WsDeps extends UpgradeDeps {
  bc: Broadcaster;
  requests: SocketRequests;
  sweeper: Sweeper;
  subscriptions: Subscriptions;
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
  /** The source address, for the subscribe rate limit (admission.ts). */
  source: string;
  session?: Session;
}

let nextId = 1;

/** Messages refused for rate in a row after which a socket is closed (4029): a client that does not back off. */
export const PERSISTENT = 100;

function heartbeat(raw: string | undefined): number {
  if (raw === undefined) return HEARTBEAT.default;
  const hb = parseHeartbeat(raw);
  if (hb === undefined) throw errors.badParam('hb', `must be a whole number of milliseconds from ${HEARTBEAT.min} to ${HEARTBEAT.max}`);
  return hb;
}

/**
 * The subscriber socket route, `/ws`: the transport edge. It decodes and
 * rate-limits requests, and leaves sessions to the hub, requests to
 * SocketRequests, stored sets to Subscriptions and backpressure to the sweep.
 */
export function registerWs(app: TemplatedApp, deps: WsDeps): void {
  const { bc, limits } = deps;
  const budgets = new Budgets(limits);
  const ack = (s: Session, id: number, a: { status: 0 | 1; message: string; current?: number }) => bc.send(s, { op: 'ack', id, ...a });

  const handle = (s: Session, msg: ClientMessage): void => {
    if (msg.op === 'ping') return ack(s, msg.id, { status: 1, message: 'pong' });
    const { ack: a, then } = msg.op === 'subscribe' ? deps.requests.subscribe(s, msg) : deps.requests.unsubscribe(s, msg);
    ack(s, msg.id, a);
    then?.();
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
      const s = (d.session = new Session(nextId++, d.keyId, d.client, d.format, d.hbMs, ws));
      bc.opened(s);
      deps.sweeper.opened(s);
      deps.subscriptions.opened(s);
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
          return ws.end(CLOSE.RATE, 'rate limit exceeded persistently');
        }
        return ack(s, peekId(data, isBinary), { status: 0, message: refused.message });
      }
      d.strikes = 0;
      if (data.byteLength > limits.maxMessageBytes) {
        return ack(s, 0, { status: 0, message: `message is ${data.byteLength} bytes; the limit is ${limits.maxMessageBytes}` });
      }
      const msg = decodeClient(data, isBinary, limits.maxMarkets);
      if ('error' in msg) return ack(s, msg.id ?? 0, { status: 0, message: msg.error });
      const busy = msg.op === 'subscribe' ? deps.admission.subscribe(d.source) : undefined;
      if (busy) return ack(s, msg.id, { status: 0, message: busy });
      handle(s, msg);
    },

    drain: (ws: WebSocket<WsData>) => deps.sweeper.drained(ws.getUserData().session!),
    close: (ws: WebSocket<WsData>) => {
      const d = ws.getUserData();
      const s = d.session!;
      budgets.closed(d.keyId);
      bc.closed(s);
      deps.sweeper.closed(s);
    },
  });
}
