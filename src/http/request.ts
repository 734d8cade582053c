import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { errors, type ServiceError } from '../errors.js';
import { STATUS_LINES, errorBody, httpStatus } from './status.js';
import { MAX_IDS, type IdRule } from '../refdata/ids.js';
import { ByteBudget } from '../lib/byte-budget.js';

export type Query = ReadonlyMap<string, string>;

const decode = (text: string): string => decodeURIComponent(text.replace(/\+/g, ' '));

/** Strict query parsing: a parameter given twice or badly percent-encoded is an error, not a guess. */
export function parseQuery(raw: string | undefined): Query {
  const out = new Map<string, string>();
  if (!raw) return out;
  // Most queries are plain IDs and commas: nothing to decode, so parts are cut out and kept as they are.
  const plain = raw.indexOf('%') < 0 && raw.indexOf('+') < 0;
  // The next '=' at or after `start`, searched once per '=', so many parts without one stay linear.
  let eq = raw.indexOf('=');
  for (let start = 0; start <= raw.length;) {
    let end = raw.indexOf('&', start);
    if (end < 0) end = raw.length;
    if (end > start) {
      if (eq >= 0 && eq < start) eq = raw.indexOf('=', start);
      const cut = eq >= 0 && eq < end ? eq : end;
      let key = raw.slice(start, cut);
      let value = cut < end ? raw.slice(cut + 1, end) : '';
      if (!plain) {
        try {
          key = decode(key);
          value = decode(value);
        } catch {
          throw errors.badParam('query string', 'is not valid percent-encoding');
        }
      }
      if (out.has(key)) throw errors.badParam(key, 'is given more than once; give each parameter once (a list joins its IDs with commas)');
      out.set(key, value);
    }
    start = end + 1;
  }
  return out;
}

/** A checked ID list. */
interface Ids<T> {
  /** The IDs in the caller's order of first appearance, duplicates collapsed. */
  readonly list: T[];
  /** `name=<IDs>`, the parameter as the answer depends on it: as written when nothing collapsed (a checked ID is written one way only). */
  readonly key: string;
}

/**
 * Which IDs a list holds already: an open-addressing table over a hash of each
 * ID's length and last characters, since a Set of 50 strings costs more than
 * reading them. A slot holds an index into the list plus one; 0 is empty.
 * Shared, since lists are read synchronously one at a time.
 */
const SLOTS = 128;
const slots = new Int32Array(SLOTS);
/** IDs of a list mostly differ towards their end. */
const HASHED = 8;

function addOnce<T>(list: T[], id: T, text: string, start: number, end: number): void {
  let h = end - start;
  for (let i = Math.max(start, end - HASHED); i < end; i++) h = (Math.imul(h, 31) + text.charCodeAt(i)) | 0;
  for (let s = (h ^ (h >>> 7)) & (SLOTS - 1); ; s = (s + 1) & (SLOTS - 1)) {
    const at = slots[s];
    if (at === 0) {
      slots[s] = list.push(id);
      return;
    }
    if (list[at - 1] === id) return;
  }
}

/**
 * A comma-joined list of 1 to 50 IDs, without spaces, read in place from
 * `source` between `from` and its end. `whole`: the source is the query
 * `name=<list>` and nothing else, so it is the key as it stands.
 */
function idList<T>(source: string, from: number, whole: boolean, name: string, rule: IdRule<T>, describe: string): Ids<T> {
  if (from === source.length) throw errors.badParam(name, `must list 1 to ${MAX_IDS} ${describe}, comma-separated without spaces`);
  const list: T[] = [];
  slots.fill(0);
  let count = 0;
  let bad: string | undefined;
  for (let start = from; start <= source.length;) {
    let end = source.indexOf(',', start);
    if (end < 0) end = source.length;
    // Past the limit items are only counted: too many is the error reported, whatever they hold.
    if (++count <= MAX_IDS && bad === undefined) {
      const id = rule(source, start, end);
      if (id === undefined) bad = source.slice(start, end);
      else addOnce(list, id, source, start, end);
    }
    start = end + 1;
  }
  if (count > MAX_IDS) throw errors.badParam(name, `lists ${count} IDs; at most ${MAX_IDS} are allowed`);
  if (bad !== undefined) throw errors.badParam(name, `has "${bad}": IDs must be ${describe}, comma-separated without spaces`);
  if (list.length < count) return { list, key: `${name}=${list.join(',')}` };
  return { list, key: whole ? source : `${name}=${source.slice(from)}` };
}

/**
 * The ID list of parameter `name` in query `q` (parsed from `raw`). When the
 * query is that parameter alone and plain (anything else would make it
 * longer), the IDs are read from the raw query itself: a flat string reads
 * faster than a slice of one, and it is the key with no new string made.
 */
export function queryIds<T>(q: Query, raw: string, name: string, rule: IdRule<T>, describe: string, required: true): Ids<T>;
export function queryIds<T>(q: Query, raw: string, name: string, rule: IdRule<T>, describe: string, required: false): Ids<T> | undefined;
export function queryIds<T>(q: Query, raw: string, name: string, rule: IdRule<T>, describe: string, required: boolean): Ids<T> | undefined {
  const text = q.get(name);
  if (text === undefined) {
    if (required) throw errors.badParam(name, `is required: 1 to ${MAX_IDS} ${describe}, comma-separated`);
    return undefined;
  }
  const whole = q.size === 1 && raw.length === name.length + 1 + text.length;
  return whole ? idList(raw, name.length + 1, true, name, rule, describe) : idList(text, 0, false, name, rule, describe);
}

/** `close` ends the connection after the answer: while draining, so keep-alive clients move on before exit. */
function send(res: HttpResponse, status: number, body: string | Buffer, headers?: Readonly<Record<string, string>>, type = 'application/json', close = false): void {
  res.cork(() => write(res, status, body, headers, type, close));
}

/**
 * `send` without the cork, for the synchronous top of a uWS handler, which uWS
 * has corked already. A Buffer body is sent as it is; a string is encoded first.
 */
export function write(res: HttpResponse, status: number, body: string | Buffer, headers: Readonly<Record<string, string>> | undefined, type: string, close: boolean): void {
  res.writeStatus(STATUS_LINES[status] ?? String(status));
  res.writeHeader('content-type', type);
  if (headers) for (const k in headers) res.writeHeader(k, headers[k]);
  endPaced(res, body, close);
}

/**
 * Ends a response without having uWS hold what the client has not read: `end`
 * buffers every answer of a client that pipelines requests and reads none
 * (four such connections took the process to 2.8 GB in 10 s). What the socket
 * does not take now is written as it drains, and uWS reads no further request
 * from that connection until this answer is out.
 */
export function endPaced(res: HttpResponse, body: string | Buffer, close: boolean): void {
  // A closing connection takes no further request: its one answer is all uWS holds.
  if (close) return void res.end(body, true);
  const size = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
  const base = res.getWriteOffset();
  const [ok, done] = res.tryEnd(body, size);
  if (ok || done) return;
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  // uWS requires an abort handler on an answer still going out; the client leaving ends it.
  res.onAborted(() => undefined);
  res.onWritable((offset) => res.tryEnd(bytes.subarray(offset - base), size)[0]);
}

export function sendError(res: HttpResponse, err: ServiceError, close = false): void {
  send(res, httpStatus(err), errorBody(err), err.headers, undefined, close);
}

/**
 * Bytes of request bodies still arriving, per source (the API key, or the
 * address when keys are off). A body is held whole until its last byte, at the
 * client's pace: without this bound one caller's many slow uploads could hold
 * any amount of memory. A source's first body always fits.
 */
export class BodyBudget extends ByteBudget<ServiceError> {
  constructor(max: number) {
    super(max, errors.bodiesInFlight);
  }
}

/** Where a body's bytes are counted while they arrive. */
export interface BodyAccount {
  budget: BodyBudget;
  source: string;
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

  reply(status: number, body: string | Buffer, headers?: Readonly<Record<string, string>>, type?: string, close = false): void {
    if (!this.aborted) send(this.res, status, body, headers, type, close);
  }

  fail(err: ServiceError, close = false): void {
    // A body we stopped reading early leaves bytes on the wire: close after answering.
    this.reply(httpStatus(err), errorBody(err), err.headers, undefined, close || this.unread || err.code === 'TOO_LARGE');
  }

  /** Set when the body was refused before its end: its rest is still on the wire. */
  private unread = false;

  /**
   * Reads the whole body, refusing more than `limit` bytes, counting what has
   * arrived against `account` until the last byte. Call before any await.
   */
  body(req: HttpRequest, limit: number, types: readonly string[], account?: BodyAccount): Promise<Buffer> {
    const type = req.getHeader('content-type').split(';')[0].trim().toLowerCase();
    const declared = Number(req.getHeader('content-length') || '0');
    return new Promise((resolve, reject) => {
      if (!types.includes(type)) return reject(errors.unsupportedType(types.join(' or ')));
      if (declared > limit) return reject(errors.tooLarge(limit));
      const chunks: Buffer[] = [];
      let size = 0;
      let counted = 0;
      const settle = (): void => {
        account?.budget.give(account.source, counted);
        counted = 0;
        size = -1;
      };
      const refuse = (err: ServiceError): void => {
        settle();
        this.unread = true;
        reject(err);
      };
      this.onAbort = () => {
        settle();
        reject(errors.aborted());
      };
      // The declared length is counted before a byte is read, so a refused body costs nothing.
      const full = account?.budget.take(account.source, declared);
      if (full) return refuse(full);
      counted = declared;
      this.res.onData((chunk, isLast) => {
        if (size < 0) return;
        size += chunk.byteLength;
        if (size > limit) return refuse(errors.tooLarge(limit));
        if (account && size > counted) {
          const more = account.budget.take(account.source, size - counted);
          if (more) return refuse(more);
          counted = size;
        }
        // The chunk's memory belongs to uWS and is reused after this callback returns.
        chunks.push(Buffer.from(new Uint8Array(chunk)));
        if (isLast) {
          settle();
          resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
        }
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
