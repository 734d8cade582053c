import type { TemplatedApp, WebSocket } from 'uWebSockets.js';
import { uwsBuild } from './uws.js';
import { CLOSE, errors, type ServiceError } from '../errors.js';
import { decodeClient } from '../odds/client-codec.js';
import { peekId } from './peek.js';
import { HEARTBEAT, parseHeartbeat, refusal, type ClientMessage } from '../odds/messages.js';
import type { Format } from '../odds/book.js';
import { narrowingOf, type MarketsRequest, type SocketSubscriptions, type SubscribeRequest } from '../hub/socket-subscriptions.js';
import { Subscriber, type SubscriberDeps } from '../hub/subscriber.js';
import type { Sweep } from '../hub/sweep.js';
import type { AuthMetrics } from '../metrics/auth.js';
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
  /** What every subscriber shares (hub/subscriber.ts). */
  subscribers: SubscriberDeps;
  socketSubs: SocketSubscriptions;
  sweep: Sweep;
  metrics: AuthMetrics;
  limits: WsLimits;
  admission: Admission;
}

/** The socket's data: who it is from the handshake, and its subscriber once open. */
interface WsData {
  keyId: string;
  client: string;
  format: Format;
  hbMs: number;
  /** Whom the subscribe rate limit counts (admission.ts): the API key with keys in force, else the address. */
  source: string;
  /** The caller's address, for the record's ledger. */
  address: string;
  subscriber?: Subscriber;
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

const CLOSED = Symbol('closed for rate');

// A message's cost, paid before it is read. A socket refused past PERSISTENT times with no second
// free of refusals between is closed (CLOSED); otherwise a refusal is answered by the caller,
// which knows the message's id.
function charge(deps: WsDeps, budgets: Budgets, keyId: string, s: Subscriber, bytes: number): ServiceError | typeof CLOSED | undefined {
  const refused = budgets.spend(keyId, s.bucket, bytes);
  if (!refused) {
    s.readForRate();
    return undefined;
  }
  deps.metrics.rateLimited.inc({ scope: refused.scope });
  if (s.refusedForRate() <= PERSISTENT) return refused.err;
  budgets.abused(keyId);
  deps.hub.end(s, CLOSE.RATE);
  return CLOSED;
}

/**
 * The subscriber socket route, `/ws`: the transport edge. It rate-limits
 * requests and decodes them into the hub's words, and hands everything else
 * to the socket's `Subscriber`: its life (through the hub, which indexes it),
 * its requests (through SocketSubscriptions, which answers them), its pongs
 * and drains.
 */
export function registerWs(app: TemplatedApp, deps: WsDeps): void {
  const { hub, limits } = deps;
  const budgets = new Budgets(limits, hub, deps.subscribers.clock);
  const refuse = (s: Subscriber, id: number, err: ServiceError) => s.send(refusal(id, err));

  const handle = (s: Subscriber, msg: ClientMessage): void => {
    if (msg.op === 'ping') s.send({ op: 'ack', id: msg.id, status: 1, message: 'pong' });
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

    upgrade: (res, req, context) => upgrade(res, req, context, deps, 'subscriber', ({ who, format, query, source, address }) => {
      const hbMs = heartbeat(query.get('hb'));
      const refused = deps.admission.handshake(source) ?? budgets.refuseOpen(who.keyId);
      if (refused) throw refused;
      return { keyId: who.keyId, client: who.client, format, hbMs, source, address };
    }),

    open: (ws: WebSocket<WsData>) => {
      const d = ws.getUserData();
      const s = (d.subscriber = new Subscriber(nextId++, d.keyId, d.client, d.format, d.hbMs, budgets.opened(d.keyId), ws, deps.subscribers));
      // Its ledger opens before anything it takes: the record reads a socket from its open.
      deps.subscribers.ledger.opened(s, d.address);
      hub.open(s);
      deps.sweep.add(s);
    },

    // A message's cost is paid before it is read: a refused one is never decoded (its ack's id is peeked at its start).
    message: (ws: WebSocket<WsData>, data: ArrayBuffer, isBinary: boolean) => {
      const d = ws.getUserData();
      const s = d.subscriber!;
      const refused = charge(deps, budgets, d.keyId, s, data.byteLength);
      if (refused === CLOSED) return;
      if (refused) return refuse(s, peekId(data, isBinary), refused);
      if (data.byteLength > limits.maxMessageBytes) return refuse(s, 0, errors.messageTooLarge(data.byteLength, limits.maxMessageBytes));
      const msg = decodeClient(data, isBinary, hub.maxMarkets);
      if ('error' in msg) return refuse(s, msg.id ?? 0, errors.badMessage(msg.error));
      const busy = msg.op === 'subscribe' ? deps.admission.subscribe(d.source) : undefined;
      if (busy) return refuse(s, msg.id, busy);
      handle(s, msg);
    },

    // A pong answers one of the subscriber's probes: how far it has read (subscriber.ts). One that
    // answers none is a message like any other: a socket sending them at full speed is refused
    // for rate, and closed once it does not back off.
    pong: (ws: WebSocket<WsData>, message: ArrayBuffer) => {
      const d = ws.getUserData();
      const s = d.subscriber!;
      if (!s.pong(message)) charge(deps, budgets, d.keyId, s, message.byteLength);
    },
    // A client's own ping (uWS answers it with a pong before this is called) is a message too: at
    // full speed each costs the server a write and a read, and was never refused.
    ping: (ws: WebSocket<WsData>, message: ArrayBuffer) => {
      const d = ws.getUserData();
      charge(deps, budgets, d.keyId, d.subscriber!, message.byteLength);
    },
    drain: (ws: WebSocket<WsData>) => ws.getUserData().subscriber!.drained(),
    close: (ws: WebSocket<WsData>, code: number) => {
      const d = ws.getUserData();
      hub.close(d.subscriber!, code);
      budgets.closed(d.keyId);
    },
  });
}
