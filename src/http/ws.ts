import uws from 'uWebSockets.js';
import type { HttpRequest, HttpResponse, TemplatedApp, us_socket_context_t } from 'uWebSockets.js';
import { errors, known } from '../errors.js';
import { decodeClient } from '../odds/codec.js';
import type { Broadcaster, Socket, SocketState } from '../odds/broadcaster.js';
import { HEARTBEAT, parseHeartbeat, type ClientMessage } from '../odds/messages.js';
import type { Format } from '../odds/book.js';
import { MAX_IDS, isMarketId } from '../refdata/ids.js';
import type { Logger } from '../log.js';
import { parseQuery, sendError } from './request.js';
import type { Auth, Principal } from '../auth/auth.js';
import type { SocketRegistry } from '../auth/sockets.js';
import type { AuthMetrics } from '../metrics/auth.js';

export interface WsLimits {
  maxMarkets: number;
  maxMessageBytes: number;
  messagesPerSecond: number;
  idleTimeoutS: number;
  /** permessage-deflate for clients that offer it; uWS then deflates every frame once per socket. */
  compression: boolean;
}

export interface WsDeps {
  broadcaster: Broadcaster;
  auth: Auth;
  sockets: SocketRegistry;
  /** Why sockets cannot open yet (starting), or undefined. */
  gate(): string | undefined;
  metrics: AuthMetrics;
  limits: WsLimits;
  log: Logger;
  /** The client's stored market set, applied when a socket opens. */
  storedMarkets(client: string): Promise<string[]>;
}

export const SUBPROTOCOLS: Record<string, Format> = { 'odds.v1.proto': 'proto', 'odds.v1.json': 'json' };
let nextId = 1;

/** First of the client's offered subprotocols that we speak; JSON when none is offered. */
function pickProtocol(header: string): { name: string; format: Format } {
  for (const offered of header.split(',')) {
    const name = offered.trim();
    const format = SUBPROTOCOLS[name];
    if (format) return { name, format };
  }
  return { name: '', format: 'json' };
}

function heartbeat(raw: string | undefined): number {
  if (raw === undefined) return HEARTBEAT.default;
  const hb = parseHeartbeat(raw);
  if (hb === undefined) throw errors.badParam('hb', `must be a whole number of milliseconds from ${HEARTBEAT.min} to ${HEARTBEAT.max}`);
  return hb;
}

/** The market list of a subscribe or unsubscribe message, or why it is refused. */
function checkMids(mids: string[] | undefined): string[] | string {
  if (!mids || mids.length === 0 || mids.length > MAX_IDS) return `mids must list 1 to ${MAX_IDS} market IDs, got ${mids?.length ?? 0}`;
  const bad = mids.findIndex((m) => !isMarketId(m));
  if (bad >= 0) return `mids[${bad}] must be a market ID matching [A-Za-z0-9._:-]{1,64}`;
  return [...new Set(mids)];
}

export function registerWs(app: TemplatedApp, deps: WsDeps): void {
  const { broadcaster, limits, log } = deps;

  const ack = (ws: Socket, id: number, status: 0 | 1, message: string) => broadcaster.send(ws, { op: 'ack', id, status, message });

  /** A token bucket per socket: a burst of one second's allowance, refilled continuously. */
  const allowed = (s: SocketState): boolean => {
    const now = Date.now();
    s.tokens = Math.min(limits.messagesPerSecond, s.tokens + ((now - s.tokensAt) / 1000) * limits.messagesPerSecond);
    s.tokensAt = now;
    if (s.tokens < 1) return false;
    s.tokens -= 1;
    return true;
  };

  const handle = (ws: Socket, s: SocketState, msg: ClientMessage): void => {
    if (msg.op === 'ping') return ack(ws, msg.id, 1, 'pong');
    const mids = checkMids(msg.mids);
    if (typeof mids === 'string') return ack(ws, msg.id, 0, mids);
    if (msg.op === 'subscribe') {
      const added = mids.filter((m) => !s.mids.has(m)).length;
      if (s.mids.size + added > limits.maxMarkets) {
        return ack(ws, msg.id, 0, `subscribing to ${added} more markets would pass the limit of ${limits.maxMarkets} markets per socket`);
      }
      ack(ws, msg.id, 1, `Subscribed from market ${mids.join(',')}`);
      broadcaster.attach(ws, mids);
    } else {
      broadcaster.detach(ws, mids);
      ack(ws, msg.id, 1, `Unsubscribed from market ${mids.join(',')}`);
    }
  };

  app.ws<SocketState>('/ws', {
    // uWS drops the connection above this; the documented limit below it is answered with an ack.
    maxPayloadLength: Math.max(limits.maxMessageBytes * 4, 256 * 1024),
    // Skipping is done by the broadcaster at its soft limit, and it closes
    // sockets over the hard limit. uWS's own limit is off (0): it would drop
    // frames silently, the close frame among them.
    maxBackpressure: 0,
    closeOnBackpressureLimit: 0,
    idleTimeout: limits.idleTimeoutS,
    compression: limits.compression ? uws.SHARED_COMPRESSOR : uws.DISABLED,
    sendPingsAutomatically: true,

    upgrade: (res: HttpResponse, req: HttpRequest, context: us_socket_context_t) => {
      let hbMs: number;
      let who: Principal;
      try {
        const closed = deps.gate();
        if (closed) throw errors.notReady(closed);
        const query = parseQuery(req.getQuery());
        hbMs = heartbeat(query.get('hb'));
        // Browsers cannot set headers on a WebSocket, hence the query parameter.
        who = deps.auth.authenticate(req.getHeader('x-api-key') || query.get('key') || undefined, 'subscriber');
        const refused = deps.sockets.refuse(who.keyId);
        if (refused) throw refused;
      } catch (err) {
        return sendError(res, known(err, log, 'socket upgrade'));
      }
      const { name, format } = pickProtocol(req.getHeader('sec-websocket-protocol'));
      const now = Date.now();
      const state: SocketState = {
        id: nextId++, keyId: who.keyId, client: who.client, format, hbMs, mids: new Set(), lagging: false, laggingSince: 0, sentSeqs: undefined,
        lastSendAt: now, tokens: limits.messagesPerSecond, tokensAt: now, closed: false,
      };
      res.upgrade(state, req.getHeader('sec-websocket-key'), name, req.getHeader('sec-websocket-extensions'), context);
    },

    open: (ws: Socket) => {
      deps.sockets.add(ws.getUserData().keyId, ws);
      broadcaster.opened(ws);
      const s = ws.getUserData();
      deps.storedMarkets(s.client).then(
        (mids) => {
          if (!s.closed && mids.length) broadcaster.attach(ws, mids.slice(0, limits.maxMarkets));
        },
        (err) => log.warn('could not load stored markets for a new socket', { client: s.client, err: (err as Error).message }),
      );
    },

    message: (ws: Socket, data: ArrayBuffer, isBinary: boolean) => {
      const s = ws.getUserData();
      if (data.byteLength > limits.maxMessageBytes) {
        return ack(ws, 0, 0, `message is ${data.byteLength} bytes; the limit is ${limits.maxMessageBytes}`);
      }
      const msg = decodeClient(data, isBinary);
      const id = 'error' in msg ? (msg.id ?? 0) : msg.id;
      if (!allowed(s)) {
        deps.metrics.rateLimited.inc({ scope: 'socket' });
        return ack(ws, id, 0, `rate limit: at most ${limits.messagesPerSecond} messages per second`);
      }
      if ('error' in msg) return ack(ws, id, 0, msg.error);
      handle(ws, s, msg);
    },

    drain: (ws: Socket) => broadcaster.drained(ws),
    close: (ws: Socket) => {
      deps.sockets.remove(ws.getUserData().keyId, ws);
      broadcaster.closed(ws);
    },
  });
}
