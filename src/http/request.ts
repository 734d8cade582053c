import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { errors, type ServiceError } from '../errors.js';
import { STATUS_LINES, errorBody, httpStatus } from './status.js';
import { MAX_IDS, type IdRule } from '../refdata/ids.js';
import { ByteBudget } from '../lib/byte-budget.js';
import { textHash } from '../lib/text-table.js';
import { randomInt } from 'node:crypto';

export type Query = ReadonlyMap<string, string>;

const decode = (text: string): string => decodeURIComponent(text.replace(/\+/g, ' '));

/**
 * The caller's `x-api-key` header. uWS gives the first of several, so a request naming two keys
 * (a proxy appending its own, a client's mistake) was served as whichever came first: which one
 * the caller meant cannot be told, so two that differ are refused, as the header and `?key=`
 * naming different keys are. Read only when keys are in force.
 */
export function apiKeyHeader(req: HttpRequest): string | undefined {
  const key = req.getHeader('x-api-key');
  if (!key) return undefined;
  let differ = false;
  req.forEach((name, value) => (differ ||= name === 'x-api-key' && value !== key));
  if (differ) throw errors.keysRepeated();
  return key;
}

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
 * Where the distinct IDs of the list read last lie in its source, and an
 * open-addressing table over a hash of each ID to find repeats, since a Set of
 * 50 strings costs more than reading them. A slot holds an index into `starts`
 * plus one; 0 is empty. Shared, since lists are read synchronously one at a
 * time; `listsRead` tells an IdPlaces whether they are still its own.
 */
const starts = new Int32Array(MAX_IDS);
const ends = new Int32Array(MAX_IDS);
const SLOTS = 128;
const slots = new Int32Array(SLOTS);
let listsRead = 0;
/**
 * Every character is hashed, from a seed of this process: IDs that all land
 * in one slot are then not for a caller to choose, since 50 of them would
 * compare each against all before, a thousand and more comparisons of up to 64
 * characters in one request.
 */
const SEED = randomInt(0x7fffffff);

function sameStretch(text: string, a: number, b: number, length: number): boolean {
  for (let i = 0; i < length; i++) if (text.charCodeAt(a + i) !== text.charCodeAt(b + i)) return false;
  return true;
}

/** Adds the ID between `start` and `end` as the `distinct`th unless it is there already; returns the count of distinct IDs. */
function addOnce(text: string, start: number, end: number, distinct: number): number {
  for (let s = textHash(SEED, text, start, end) & (SLOTS - 1); ; s = (s + 1) & (SLOTS - 1)) {
    const at = slots[s] - 1;
    if (at < 0) {
      starts[distinct] = start;
      ends[distinct] = end;
      slots[s] = distinct + 1;
      return distinct + 1;
    }
    if (ends[at] - starts[at] === end - start && sameStretch(text, starts[at], start, end - start)) return distinct;
  }
}

/**
 * A checked list of IDs read in place: each distinct one is visited where it
 * is written in `source`, nothing cut out, in the caller's order of first
 * appearance. Valid until the next list is read; visited later it throws
 * rather than hand out another list's IDs.
 */
export class IdPlaces {
  private readonly read = listsRead;

  constructor(
    readonly source: string,
    readonly count: number,
    /** As `Ids.key`. */
    readonly key: string,
  ) {}

  each(visit: (text: string, start: number, end: number) => void): void {
    if (this.read !== listsRead) throw new Error(`the places of ID list ${this.key} were read over by another list`);
    for (let i = 0; i < this.count; i++) visit(this.source, starts[i], ends[i]);
  }
}

/**
 * A comma-joined list of 1 to 50 IDs, without spaces, read in place from
 * `source` between `from` and its end, each checked by `rule`. `whole`: the
 * source is the query `name=<list>` and nothing else, so it is the key as it
 * stands. `values`, when given, takes what `rule` read of each distinct ID,
 * so no ID is read twice.
 */
function idPlaces(source: string, from: number, whole: boolean, name: string, rule: IdRule<unknown>, describe: string, values?: unknown[]): IdPlaces {
  if (from === source.length) throw errors.badParam(name, `must list 1 to ${MAX_IDS} ${describe}, comma-separated without spaces`);
  listsRead++;
  slots.fill(0);
  let count = 0;
  let distinct = 0;
  let bad: string | undefined;
  for (let start = from; start <= source.length;) {
    let end = source.indexOf(',', start);
    if (end < 0) end = source.length;
    // Past the limit items are only counted: too many is the error reported, whatever they hold.
    if (++count <= MAX_IDS && bad === undefined) {
      const value = rule(source, start, end);
      if (value === undefined) bad = source.slice(start, end);
      else if (addOnce(source, start, end, distinct) > distinct) {
        distinct++;
        values?.push(value);
      }
    }
    start = end + 1;
  }
  if (count > MAX_IDS) throw errors.badParam(name, `lists ${count} IDs; at most ${MAX_IDS} are allowed`);
  if (bad !== undefined) throw errors.badParam(name, `has "${bad}": IDs must be ${describe}, comma-separated without spaces`);
  if (distinct < count) {
    let key = `${name}=`;
    for (let i = 0; i < distinct; i++) key += (i ? ',' : '') + source.slice(starts[i], ends[i]);
    return new IdPlaces(source, distinct, key);
  }
  return new IdPlaces(source, distinct, whole ? source : `${name}=${source.slice(from)}`);
}

/**
 * The ID list of parameter `name` in query `q` (parsed from `raw`), read in
 * place. When the query is that parameter alone and plain (anything else
 * would make it longer), the IDs are read from the raw query itself: a flat
 * string reads faster than a slice of one, and it is the key with no new
 * string made.
 */
export function queryIdPlaces(q: Query, raw: string, name: string, rule: IdRule<unknown>, describe: string, required?: true, values?: unknown[]): IdPlaces;
export function queryIdPlaces(q: Query, raw: string, name: string, rule: IdRule<unknown>, describe: string, required: boolean, values?: unknown[]): IdPlaces | undefined;
export function queryIdPlaces(q: Query, raw: string, name: string, rule: IdRule<unknown>, describe: string, required = true, values?: unknown[]): IdPlaces | undefined {
  const text = q.get(name);
  if (text === undefined) {
    if (required) throw errors.badParam(name, `is required: 1 to ${MAX_IDS} ${describe}, comma-separated`);
    return undefined;
  }
  const whole = q.size === 1 && raw.length === name.length + 1 + text.length;
  return whole ? idPlaces(raw, name.length + 1, true, name, rule, describe, values) : idPlaces(text, 0, false, name, rule, describe, values);
}

/** As `queryIdPlaces`, each ID as `rule` reads it. */
export function queryIds<T>(q: Query, raw: string, name: string, rule: IdRule<T>, describe: string, required: true): Ids<T>;
export function queryIds<T>(q: Query, raw: string, name: string, rule: IdRule<T>, describe: string, required: false): Ids<T> | undefined;
export function queryIds<T>(q: Query, raw: string, name: string, rule: IdRule<T>, describe: string, required: boolean): Ids<T> | undefined {
  const list: T[] = [];
  const places = queryIdPlaces(q, raw, name, rule, describe, required, list);
  return places && { list, key: places.key };
}

/** `close` ends the connection after the answer: while draining, so keep-alive clients move on before exit. */
function send(res: HttpResponse, status: number, body: string | Buffer, headers?: Readonly<Record<string, string>>, type = 'application/json', close = false, head = false): void {
  res.cork(() => write(res, status, body, headers, type, close, head));
}

/**
 * `send` without the cork, for the synchronous top of a uWS handler, which uWS
 * has corked already. A Buffer body is sent as it is; a string is encoded first.
 * `head`: the answer to a HEAD, the same headers without the body.
 */
export function write(res: HttpResponse, status: number, body: string | Buffer, headers: Readonly<Record<string, string>> | undefined, type: string, close: boolean, head = false): void {
  res.writeStatus(STATUS_LINES[status] ?? String(status));
  res.writeHeader('content-type', type);
  if (headers) for (const k in headers) res.writeHeader(k, headers[k]);
  if (head) endHead(res, typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength, close);
  else endPaced(res, body, close);
}

/**
 * Ends the answer to a HEAD: the length the GET's body would have, and no body. The length is
 * written as a header: v20.30 aborts the process when endWithoutBody is given one, and v20.57
 * then writes a wrong one. uWS closes nothing here, so `close` is said for the client to act on.
 */
export function endHead(res: HttpResponse, size: number, close: boolean): void {
  res.writeHeader('content-length', String(size));
  if (close) res.writeHeader('connection', 'close');
  res.endWithoutBody();
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

export function sendError(res: HttpResponse, err: ServiceError, close = false, head = false): void {
  send(res, httpStatus(err), errorBody(err), err.headers, undefined, close, head);
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
  private leaving: AbortController | undefined;

  /** `head`: the request is a HEAD, answered with the headers alone. */
  constructor(readonly res: HttpResponse, private readonly head = false) {
    res.onAborted(() => {
      this.aborted = true;
      this.onAbort?.();
      this.leaving?.abort();
    });
  }

  /** Aborts when the client goes away before its answer: work done only for the answer stops. */
  get signal(): AbortSignal {
    if (!this.leaving) {
      this.leaving = new AbortController();
      if (this.aborted) this.leaving.abort();
    }
    return this.leaving.signal;
  }

  reply(status: number, body: string | Buffer, headers?: Readonly<Record<string, string>>, type?: string, close = false): void {
    if (!this.aborted) send(this.res, status, body, headers, type, close, this.head);
  }

  fail(err: ServiceError, close = false): void {
    // A body we stopped reading early leaves bytes on the wire: close after answering.
    this.reply(httpStatus(err), errorBody(err), err.headers, undefined, close || this.unread);
  }

  /** Set when the body was refused before its end: its rest is still on the wire. */
  private unread = false;

  /**
   * Reads the whole body, refusing more than `limit` bytes, counting what has
   * arrived against `account` until the last byte. Call before any await. A
   * body past `limit` is read to its end and dropped (nothing held, nothing
   * counted) before the 413, so its client, still sending, reads the answer
   * (closing with bytes unread resets the connection, and the client sees
   * that instead); past DISCARDED_BYTES more it is left unread, the
   * connection closed after the answer.
   */
  body(req: HttpRequest, limit: number, types: readonly string[], account?: BodyAccount): Promise<Buffer> {
    const type = req.getHeader('content-type').split(';')[0].trim().toLowerCase();
    const declared = Number(req.getHeader('content-length') || '0');
    return new Promise((resolve, reject) => {
      if (!types.includes(type)) return reject(errors.unsupportedType(types.join(' or ')));
      const chunks: Buffer[] = [];
      let size = 0;
      let counted = 0;
      /** Set once the body is refused and its rest is read to be dropped. */
      let dropping: ServiceError | undefined;
      const settle = (): void => {
        account?.budget.give(account.source, counted);
        counted = 0;
      };
      const refuse = (err: ServiceError): void => {
        settle();
        size = -1;
        this.unread = true;
        reject(err);
      };
      const drop = (err: ServiceError): void => {
        settle();
        chunks.length = 0;
        dropping = err;
      };
      this.onAbort = () => {
        settle();
        size = -1;
        reject(errors.aborted());
      };
      if (declared > limit + DISCARDED_BYTES) return refuse(errors.tooLarge(limit));
      if (declared > limit) drop(errors.tooLarge(limit));
      else {
        // The declared length is counted before a byte is read, so a refused body costs nothing.
        const full = account?.budget.spend(account.source, declared);
        if (full) return refuse(full);
        counted = declared;
      }
      this.res.onData((chunk, isLast) => {
        if (size < 0) return;
        size += chunk.byteLength;
        if (!dropping && size > limit) drop(errors.tooLarge(limit));
        if (dropping) {
          if (size > limit + DISCARDED_BYTES) return refuse(dropping);
          if (isLast) {
            size = -1;
            reject(dropping);
          }
          return;
        }
        if (account && size > counted) {
          const more = account.budget.spend(account.source, size - counted);
          if (more) return refuse(more);
          counted = size;
        }
        // The chunk's memory belongs to uWS and is reused after this callback returns.
        chunks.push(Buffer.from(new Uint8Array(chunk)));
        if (isLast) {
          settle();
          size = -1;
          resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
        }
      });
    });
  }
}

/** How far past its limit a refused body is read and dropped, so that its client reads the 413. */
export const DISCARDED_BYTES = 16 * 1024 * 1024;

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parses a JSON body, turning a syntax error into a 400 that says so, and bytes that are not
 * UTF-8 (RFC 8259 8.1) into a 400 naming the field they are in: decoded loosely they would be
 * taken, and stored, as U+FFFD, which nobody sent.
 */
export function parseJson(body: Buffer): unknown {
  let text: string;
  try {
    text = UTF8.decode(body);
  } catch {
    throw notUtf8(body);
  }
  try {
    // A leading byte-order mark is allowed by RFC 8259 to be ignored, and the socket path ignores it too.
    return JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch {
    throw errors.badBody('is not valid JSON');
  }
}

/** The 400 for a body that is not UTF-8, naming the field (or key) of its first bad byte when the rest is JSON. */
function notUtf8(body: Buffer): ServiceError {
  const at = firstBadByte(body);
  // The bad bytes made a NUL escape, which no valid JSON text holds unescaped: the field holding a NUL is the one.
  const marked = Buffer.concat([body.subarray(0, at), Buffer.from('\\u0000'), body.subarray(at + badLength(body, at))]);
  let field: string | undefined;
  try {
    field = pathOf(JSON.parse(marked.toString('utf8')), '');
  } catch {
    // not JSON around the bad bytes either: the byte is all there is to name
  }
  return field === undefined
    ? errors.badBody(`is not valid UTF-8 (byte ${at})`)
    : errors.badParam(field || 'the body', `is not valid UTF-8 (byte ${at} of the body)`);
}

/** Where a NUL is in a parsed JSON value: `data[0].na`, `data[0] (a key)`; undefined when nowhere. */
function pathOf(v: unknown, path: string): string | undefined {
  if (typeof v === 'string') return v.includes('\0') ? path : undefined;
  if (!v || typeof v !== 'object') return undefined;
  for (const [k, x] of Object.entries(v)) {
    const inner = Array.isArray(v) ? `${path}[${k}]` : path ? `${path}.${k}` : k;
    if (!Array.isArray(v) && k.includes('\0')) return `${path || 'the body'} (a key)`;
    const found = pathOf(x, inner);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** The offset of the first byte that does not start a well-formed UTF-8 sequence (RFC 3629), or the length. */
function firstBadByte(b: Uint8Array): number {
  for (let i = 0; i < b.length;) {
    const n = b[i] < 0x80 ? 1 : wellFormed(b, i);
    if (n === 0) return i;
    i += n;
  }
  return b.length;
}

/** The length of the well-formed multi-byte sequence at `i`, or 0. */
function wellFormed(b: Uint8Array, i: number): number {
  const c = b[i];
  const n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  if (!n || i + n > b.length) return 0;
  // The second byte's range excludes overlong forms, surrogates and code points past U+10FFFF.
  const lo = c === 0xe0 ? 0xa0 : c === 0xf0 ? 0x90 : 0x80;
  const hi = c === 0xed ? 0x9f : c === 0xf4 ? 0x8f : 0xbf;
  if (b[i + 1] < lo || b[i + 1] > hi) return 0;
  for (let k = 2; k < n; k++) if (b[i + k] < 0x80 || b[i + k] > 0xbf) return 0;
  return n;
}

/** How many bytes of the bad sequence at `at` to replace: its lead byte and the continuation bytes after it. */
function badLength(b: Uint8Array, at: number): number {
  let n = 1;
  while (n < 4 && at + n < b.length && b[at + n] >= 0x80 && b[at + n] <= 0xbf) n++;
  return n;
}
