import type { HttpRequest, HttpResponse, us_socket_context_t } from 'uWebSockets.js';
import { errors, known } from '../errors.js';
import type { Format } from '../odds/book.js';
import type { Auth, Principal } from '../auth/auth.js';
import type { Role } from '../auth/keys.js';
import type { Hub } from '../hub/hub.js';
import type { Logger } from '../log.js';
import type { OriginPolicy } from './origin.js';
import type { HostPolicy } from './host.js';
import type { ClientAddresses } from './address.js';
import type { ReadyGate } from './readiness.js';
import { apiKeyHeader, parseQuery, sendError, type Query } from './request.js';
import { framingError, refuseFraming } from './framing.js';

export const SUBPROTOCOLS: Readonly<Record<string, Format>> = { 'odds.v1.proto': 'proto', 'odds.v1.json': 'json' };

export interface UpgradeDeps {
  auth: Auth;
  hub: Hub;
  /** Whether sockets may open yet (not while starting). */
  gate: ReadyGate;
  /** The names the service answers to. */
  hosts: HostPolicy;
  /** The browser pages that may open this route. */
  origins: OriginPolicy;
  /** Who is calling, by address. */
  addresses: ClientAddresses;
  log: Logger;
}

interface Handshake {
  who: Principal;
  format: Format;
  query: Query;
  /** Whom the admission limits count (http/admission.ts): the API key with keys in force, else the caller's address. */
  source: string;
  /** The caller's address (forwarding headers read only from trusted proxies). */
  address: string;
}

/**
 * First of the client's offered subprotocols that we speak; JSON when none is
 * offered. Offering only others is refused: accepting without choosing one
 * would leave the client to fail on its own ("server sent no subprotocol").
 */
function pickProtocol(header: string): { name: string; format: Format } {
  const offered = header.split(',').map((p) => p.trim()).filter(Boolean);
  for (const name of offered) {
    const format = SUBPROTOCOLS[name];
    if (format) return { name, format };
  }
  if (!offered.length) return { name: '', format: 'json' };
  throw errors.badParam('Sec-WebSocket-Protocol', `must offer ${Object.keys(SUBPROTOCOLS).join(' or ')} (or nothing, for JSON); got ${offered.join(', ').slice(0, 200)}`);
}

/**
 * The caller's key: the header, or on `/ws` `?key=` too, since browsers cannot
 * set headers on a WebSocket; both given, they must be the same key (a caller
 * sending two means one of them, and which cannot be told). Publishers are
 * programs: a key in their URL would only end up in proxy and access logs, so
 * there it is refused, not ignored.
 */
function token(req: HttpRequest, query: Query, role: Role, auth: Auth): string | undefined {
  // With keys off the header is not read: every caller is the one client.
  const header = auth.enabled ? apiKeyHeader(req) : undefined;
  if (role === 'subscriber') {
    const inUrl = query.get('key') || undefined;
    if (auth.enabled && header !== undefined && inUrl !== undefined && header !== inUrl) throw errors.keysDiffer();
    return header ?? inUrl;
  }
  if (auth.enabled && query.has('key')) throw errors.keyInUrl();
  return header;
}

/**
 * The handshake of both socket routes, `/ws` and `/ingest`: the Host, the
 * page's origin when a browser opens it, readiness, the subprotocol, the
 * caller's key and role (see `token`; a wrong key counts against its address
 * and key ID), and the socket limits. `accept` builds
 * the socket's data and may refuse by throwing; any refusal is answered with
 * the usual error body and the upgrade does not happen. `headers` go on the
 * 101 answer (uWS takes them only after a status of our own, before `upgrade`).
 */
export function upgrade<T>(
  res: HttpResponse, req: HttpRequest, context: us_socket_context_t, deps: UpgradeDeps, role: Role,
  accept: (h: Handshake) => T, headers: readonly (readonly [string, string])[] = [],
): void {
  const bad = framingError(req);
  if (bad) return refuseFraming(res, bad);
  let data: T;
  let name: string;
  try {
    const host = req.getHeader('host');
    deps.hosts.check(host);
    deps.origins.check(req.getHeader('origin'), host);
    const closed = deps.gate.closed();
    if (closed) throw errors.notReady(closed);
    // Before the key: a client that speaks none of our formats is told so, and is not counted as a wrong key.
    const picked = pickProtocol(req.getHeader('sec-websocket-protocol'));
    name = picked.name;
    const query = parseQuery(req.getQuery());
    const address = () => deps.addresses.of(res, req);
    const who = deps.auth.authenticate(token(req, query, role, deps.auth), role, address);
    const refused = deps.hub.refuse(who.keyId);
    if (refused) throw refused;
    const from = address();
    data = accept({ who, format: picked.format, query, source: deps.auth.enabled ? who.keyId : from, address: from });
  } catch (err) {
    return sendError(res, known(err, deps.log, `${role} upgrade`));
  }
  if (headers.length) res.writeStatus('101 Switching Protocols');
  for (const [name, value] of headers) res.writeHeader(name, value);
  res.upgrade(data, req.getHeader('sec-websocket-key'), name, req.getHeader('sec-websocket-extensions'), context);
}
