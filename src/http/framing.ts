import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { errors, type ServiceError } from '../errors.js';
import { uwsBuild } from './uws.js';
import { errorBody } from './status.js';
import { write } from './request.js';

/**
 * uWS reads a request's body by its first Content-Length and the service its first Host. Both
 * builds refuse an invalid Content-Length and a Content-Length beside a Transfer-Encoding in their
 * parser (v20.57 with a 400, v20.30 by closing), and v20.57 a repeated Host; neither tells apart
 * two Content-Lengths that differ, and v20.30 takes a repeated Host. Reading those headers costs
 * a call per header, so only when a Content-Length is there, or on v20.30.
 */
const HOST_REPEATS_UNCHECKED = uwsBuild.name === '20.30';

/**
 * Why a request's framing is refused (RFC 9112: 400, then close): its Content-Length given more
 * than once with different values (a proxy that read the other one would take the rest of the
 * body as a request of its own: request smuggling), or its Host more than once. Undefined when
 * it is sound.
 */
export function framingError(req: HttpRequest): ServiceError | undefined {
  const length = req.getHeader('content-length');
  if (length === '' && !HOST_REPEATS_UNCHECKED) return undefined;
  let lengths = 0;
  let hosts = 0;
  let differ = false;
  req.forEach((name, value) => {
    if (name === 'host') hosts++;
    else if (name === 'content-length') differ ||= ++lengths > 1 && value !== length;
  });
  if (differ) return errors.badFraming('Content-Length is given more than once with different values');
  if (hosts > 1) return errors.badFraming('Host is given more than once');
  return undefined;
}

/**
 * Answers a framing error and closes the connection. The answer waits for the end of this turn
 * of the loop: uWS goes on reading requests already in the buffer after a handler answers, so a
 * request smuggled behind this one would be served; with this answer still pending, uWS closes
 * the connection at such a request instead of reading it (and the answer is lost with it).
 */
export function refuseFraming(res: HttpResponse, err: ServiceError): void {
  let aborted = false;
  res.onAborted(() => (aborted = true));
  setImmediate(() => {
    if (!aborted) res.cork(() => write(res, 400, errorBody(err), err.headers, 'application/json', true));
  });
}
