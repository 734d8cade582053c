import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { errors, type ServiceError } from '../errors.js';
import { STATUS_LINES, errorBody, httpStatus } from './status.js';
import { MAX_IDS } from '../refdata/ids.js';

export type Query = ReadonlyMap<string, string>;

/** Strict query parsing: a parameter given twice or badly percent-encoded is an error, not a guess. */
export function parseQuery(raw: string | undefined): Query {
  const out = new Map<string, string>();
  if (!raw) return out;
  for (const part of raw.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    let key: string;
    let value: string;
    try {
      key = decodeURIComponent((eq < 0 ? part : part.slice(0, eq)).replace(/\+/g, ' '));
      value = eq < 0 ? '' : decodeURIComponent(part.slice(eq + 1).replace(/\+/g, ' '));
    } catch {
      throw errors.badParam('query string', 'is not valid percent-encoding');
    }
    if (out.has(key)) throw errors.badParam(key, 'is given more than once; join IDs with commas in one parameter');
    out.set(key, value);
  }
  return out;
}

/**
 * A comma-joined list of 1 to 50 IDs, without spaces. Duplicates collapse,
 * keeping the caller's order of first appearance.
 */
export function idList<T>(text: string, name: string, parse: (s: string) => T | undefined, rule: string): T[] {
  if (text === '') throw errors.badParam(name, `must list 1 to ${MAX_IDS} ${rule}, comma-separated without spaces`);
  const parts = text.split(',');
  if (parts.length > MAX_IDS) throw errors.badParam(name, `lists ${parts.length} IDs; at most ${MAX_IDS} are allowed`);
  const out = new Map<string, T>();
  for (const part of parts) {
    const id = parse(part);
    if (id === undefined) throw errors.badParam(name, `has "${part}": IDs must be ${rule}, comma-separated without spaces`);
    out.set(String(id), id);
  }
  return [...out.values()];
}

export function queryIds<T>(q: Query, name: string, parse: (s: string) => T | undefined, rule: string, required: true): T[];
export function queryIds<T>(q: Query, name: string, parse: (s: string) => T | undefined, rule: string, required: false): T[] | undefined;
export function queryIds<T>(q: Query, name: string, parse: (s: string) => T | undefined, rule: string, required: boolean): T[] | undefined {
  const text = q.get(name);
  if (text === undefined) {
    if (required) throw errors.badParam(name, `is required: 1 to ${MAX_IDS} ${rule}, comma-separated`);
    return undefined;
  }
  return idList(text, name, parse, rule);
}

/** `close` ends the connection after the answer: while draining, so keep-alive clients move on before exit. */
export function send(res: HttpResponse, status: number, body: string, headers?: Readonly<Record<string, string>>, type = 'application/json', close = false): void {
  res.cork(() => {
    res.writeStatus(STATUS_LINES[status] ?? String(status));
    res.writeHeader('content-type', type);
    if (headers) for (const k in headers) res.writeHeader(k, headers[k]);
    res.end(body, close);
  });
}

export function sendError(res: HttpResponse, err: ServiceError, close = false): void {
  send(res, httpStatus(err), errorBody(err), err.headers, undefined, close);
}

/**
 * One request whose answer comes after an await. uWS frees the response when
 * the client goes away, so every later write checks `aborted` first, and the
 * request object is read only before the first await.
 */
export class Exchange {
  aborted = false;
  private onAbort: (() => void) | undefined;

  constructor(readonly res: HttpResponse) {
    res.onAborted(() => {
      this.aborted = true;
      this.onAbort?.();
    });
  }

  reply(status: number, body: string, headers?: Readonly<Record<string, string>>, type?: string, close = false): void {
    if (!this.aborted) send(this.res, status, body, headers, type, close);
  }

  fail(err: ServiceError, close = false): void {
    // A body we stopped reading early leaves bytes on the wire: close after answering.
    this.reply(httpStatus(err), errorBody(err), err.headers, undefined, close || err.code === 'TOO_LARGE');
  }

  /** Reads the whole body, refusing more than `limit` bytes. Call before any await. */
  body(req: HttpRequest, limit: number, types: readonly string[]): Promise<Buffer> {
    const type = req.getHeader('content-type').split(';')[0].trim().toLowerCase();
    const declared = Number(req.getHeader('content-length') || '0');
    return new Promise((resolve, reject) => {
      if (!types.includes(type)) return reject(errors.unsupportedType(types.join(' or ')));
      if (declared > limit) return reject(errors.tooLarge(limit));
      const chunks: Buffer[] = [];
      let size = 0;
      this.onAbort = () => reject(errors.aborted());
      this.res.onData((chunk, isLast) => {
        if (size < 0) return;
        size += chunk.byteLength;
        if (size > limit) {
          size = -1;
          return reject(errors.tooLarge(limit));
        }
        // The chunk's memory belongs to uWS and is reused after this callback returns.
        chunks.push(Buffer.from(new Uint8Array(chunk)));
        if (isLast) resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
      });
    });
  }
}

/** Parses a JSON body, turning a syntax error into a 400 that says so. */
export function parseJson(body: Buffer): unknown {
  try {
    // A leading byte-order mark is allowed by RFC 8259 to be ignored, and the socket path ignores it too.
    return JSON.parse(body.toString('utf8').replace(/^\uFEFF/, ''));
  } catch {
    throw errors.badBody('is not valid JSON');
  }
}
