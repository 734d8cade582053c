/**
 * Generators for the fuzz suite: a seeded source of choices, malformed values of every kind,
 * and oracles that say, from the documented rules alone (docs/rest.md, "Decisions the contract
 * leaves open", and docs/protocol.md), whether an input is valid. The oracles are written from
 * the documentation, not copied from src/, so a disagreement is a finding.
 */
import { seeded } from '../helpers/random.js';
import { INGEST_KINDS } from '../../src/odds/messages.js';

// ---- choices ----

export class Gen {
  private readonly rnd: () => number;

  constructor(readonly seed: number) {
    this.rnd = seeded(seed);
  }

  float(): number {
    return this.rnd();
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.rnd() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.rnd() < p;
  }

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.rnd() * xs.length)];
  }

  /** Picks one generator by weight and runs it. */
  one<T>(choices: readonly (readonly [number, () => T])[]): T {
    const total = choices.reduce((s, [w]) => s + w, 0);
    let x = this.rnd() * total;
    for (const [w, f] of choices) if ((x -= w) < 0) return f();
    return choices[choices.length - 1][1]();
  }

  /** A size from 0 to max, skewed to small ones (log-uniform), so huge ones are rare but present. */
  size(max: number): number {
    return Math.min(max, Math.floor(Math.pow(max + 1, this.rnd())) - 1 + (this.chance(0.5) ? 0 : 1));
  }

  bytes(n: number): Buffer {
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = Math.floor(this.rnd() * 256);
    return b;
  }

  from(alphabet: string, n: number): string {
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(this.rnd() * alphabet.length)];
    return s;
  }
}

// ---- characters and strings ----

export const MID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-';

const CONTROL = Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).join('') + '\u007f\u0080\u0085\u009f';
const PUNCT = ' !"#$%&\'()*+,/;<=>?@[\\]^`{|}~';
/** Unicode that breaks naive handling: non-ASCII letters and digits, emoji, joiners, bidi, BOM, lone surrogates. */
const UNICODE = [
  'é', 'ß', 'Ω', 'ж', '中', '日本', '١', '٣', '１', '２', '😀', '👨‍👩‍👧', '𝔘', '\u0301', '\u200b', '\u200d',
  '\u202e', '\u2028', '\u2029', '\ufeff', '\ufffd', '\uffff', '\ud800', '\udfff', '\ud83d', 'İ', 'ﬀ', '\u00a0',
];

/** One awkward character: control, NUL, punctuation or unicode. */
export function nastyChar(g: Gen): string {
  return g.one([
    [3, () => g.from(CONTROL, 1)],
    [2, () => '\u0000'],
    [3, () => g.from(PUNCT, 1)],
    [4, () => g.pick(UNICODE)],
  ]);
}

/** A string mixing every awkward class, from empty to long. */
export function nastyString(g: Gen, max = 80): string {
  const n = g.size(max);
  let s = '';
  for (let i = 0; i < n; i++) s += g.chance(0.5) ? g.from(MID_ALPHABET, 1) : nastyChar(g);
  return s;
}

/** Strings that are well-formed JSON strings but mean trouble downstream. */
export const NASTY_STRINGS: readonly string[] = [
  '', ' ', '\u0000', 'a\u0000b', '\t', '\n', '\r\n', '\u007f', '\u0085', '\u2028', '\u202e', '\ufeff', '\ud800', 'a\udfffb',
  '😀', '١٢٣', '１２３', 'null', 'undefined', '__proto__', 'constructor', 'toString', '{}', '[]', '%00', '%', '../../etc/passwd',
  '<script>alert(1)</script>', "' OR 1=1 --", "'; DROP TABLE markets; --", '${7*7}', '\\', '"', 'NaN', 'Infinity', '-0',
];

// ---- IDs ----

export function goodMid(g: Gen): string {
  return g.one([
    [3, () => `1.${g.int(200000000, 200009999)}`],
    [1, () => `${g.int(1, 9)}.${g.int(1, 99999999)}.${g.int(1, 99)}`],
    [2, () => g.from(MID_ALPHABET, g.int(1, 64))],
  ]);
}

export function badMid(g: Gen): string {
  return g.one([
    [1, () => ''],
    [2, () => g.from(MID_ALPHABET, g.int(65, 300))],
    [4, () => {
      const s = goodMid(g);
      const at = g.int(0, s.length);
      return s.slice(0, at) + nastyChar(g) + s.slice(at);
    }],
    [2, () => nastyString(g, 40) + g.from(PUNCT.replace(/[.]/g, ''), 1)],
    [1, () => g.pick(NASTY_STRINGS.filter((s) => !isMarketIdRule(s)))],
    [1, () => g.pick(['１.１', '1.1 ', ' 1.1', '1.1\u0000', '1.1\n', '1,1', '1/1', '1.1#', '1.1?', 'ü.1', '1.1\u200b'])],
  ]);
}

export function goodIntId(g: Gen): string {
  return g.one([
    [4, () => String(g.int(1, 99))],
    [3, () => String(g.int(1, 99999999))],
    [1, () => String(Number.MAX_SAFE_INTEGER - g.int(0, 1000))],
  ]);
}

export function badIntId(g: Gen): string {
  return g.one([
    [4, () => g.pick(['0', '00', '01', '007', '-1', '+1', '1.0', '1.5', '1e3', '1E3', '0x1f', '0b1', '0o7', ' 1', '1 ', '\t1',
      '9007199254740992', '9007199254740993', '99999999999999999999', '1'.repeat(400), 'abc', 'NaN', 'Infinity', '-0', '1_000',
      '١', '１', '²', '1\u0000', '\u00001', '1,', 'true', 'null', '[1]', '{}', '"1"', '%31'])],
    [3, () => {
      const s = goodIntId(g);
      const at = g.int(0, s.length);
      return s.slice(0, at) + nastyChar(g) + s.slice(at);
    }],
    [2, () => nastyString(g, 30) + 'x'],
  ]);
}

// ---- documented rules ----

/** docs/rest.md: a market ID matches [A-Za-z0-9._:-]{1,64}. */
export function isMarketIdRule(s: unknown): s is string {
  return typeof s === 'string' && /^[A-Za-z0-9._:-]{1,64}$/.test(s);
}

/** docs/rest.md: positive integers in decimal, no sign, no leading zero (and representable exactly). */
export function isIntIdRule(s: string): boolean {
  return /^[1-9][0-9]*$/.test(s) && Number.isSafeInteger(Number(s));
}

export type IdKind = 'int' | 'mid';
export const MAX_IDS = 50;

/** docs/rest.md: 1 to 50 IDs, joined by commas without spaces. */
export function idListValid(text: string, kind: IdKind): boolean {
  if (text === '') return false;
  const parts = text.split(',');
  return parts.length >= 1 && parts.length <= MAX_IDS && parts.every((p) => (kind === 'int' ? isIntIdRule(p) : isMarketIdRule(p)));
}

/** A comma-joined ID list (decoded form): mostly near the rules, sometimes far off, sometimes huge. */
export function idListText(g: Gen, kind: IdKind): string {
  const good = () => (kind === 'int' ? goodIntId(g) : goodMid(g));
  const bad = () => (kind === 'int' ? badIntId(g) : badMid(g));
  const n = g.one([
    [1, () => 0],
    [8, () => g.int(1, 5)],
    [3, () => g.int(45, 55)],
    [2, () => g.int(100, 5000)],
  ]);
  if (n === 0) return g.pick(['', ',', ',,']);
  const pBad = g.pick([0, 0, 0.02, 0.3, 1]);
  const items = Array.from({ length: n }, () => (g.chance(pBad) ? bad() : good()));
  let text = items.join(',');
  if (g.chance(0.15)) {
    text = g.one([
      [1, () => ',' + text],
      [1, () => text + ','],
      [1, () => text.replace(',', ',,')],
      [1, () => text.replace(',', ', ')],
      [1, () => text + ',' + text],
      [1, () => text.replace(/,/g, ';')],
    ]);
  }
  return text;
}

// ---- query strings ----

const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** UTF-8 bytes of a JS string, lone surrogates written as their 3-byte (invalid) form rather than replaced. */
export function wtf8(s: string): Buffer {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return Buffer.from(out);
}

const hex = (b: number, lower: boolean) => '%' + (lower ? b.toString(16).padStart(2, '0') : b.toString(16).toUpperCase().padStart(2, '0'));

/**
 * Percent-encodes text for a query string, leaving commas (and sometimes colons) raw as a client
 * would. The result is printable ASCII without spaces, so it is a valid HTTP request target.
 */
export function encodeComponent(g: Gen, text: string): string {
  const lower = g.chance(0.2);
  const plus = g.chance(0.3);
  let out = '';
  for (const b of wtf8(text)) {
    const ch = String.fromCharCode(b);
    if (b < 0x80 && (UNRESERVED.test(ch) || ch === ',' || (ch === ':' && !lower))) out += ch;
    else if (ch === ' ' && plus) out += '+';
    else out += hex(b, lower);
  }
  return out;
}

/** Bad percent-encoding: truncated escapes, non-hex digits, overlong and surrogate UTF-8, stray bytes. */
export const PERCENT_GARBAGE = ['%', '%Z', '%4', '%%', '%G1', '%zz', '%C0%AF', '%C0%80', '%FF', '%E2%82', '%ED%A0%80', '%F4%90%80%80', '%80', '%0', '%-1', '%+1', '%u0041'];

export function percentGarbage(g: Gen, encoded: string): string {
  const at = g.int(0, encoded.length);
  return encoded.slice(0, at) + g.pick(PERCENT_GARBAGE) + encoded.slice(at);
}

export function randomBytesEncoded(g: Gen, n: number): string {
  return [...g.bytes(n)].map((b) => hex(b, false)).join('');
}

export type Expect = 'ok' | 'error' | 'either';

/**
 * A query string read by the documented rules: each decoded parameter, the names whose value
 * could not be decoded or that were given twice, and whether some name could not be decoded.
 */
export function readQuery(raw: string): { values: Map<string, string>; troubled: Set<string>; badName: boolean } {
  const values = new Map<string, string>();
  const troubled = new Set<string>();
  let badName = false;
  for (const part of raw.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    let key: string;
    try {
      key = decodeURIComponent((eq < 0 ? part : part.slice(0, eq)).replace(/\+/g, ' '));
    } catch {
      badName = true;
      continue;
    }
    try {
      const value = decodeURIComponent((eq < 0 ? '' : part.slice(eq + 1)).replace(/\+/g, ' '));
      if (values.has(key)) troubled.add(key);
      values.set(key, value);
    } catch {
      troubled.add(key);
    }
  }
  return { values, troubled, badName };
}

/** docs/protocol.md: `hb` is optional, whole milliseconds from 500 to 30000; a bad value refuses the upgrade with a 400. */
export function hbOracle(raw: string): Expect {
  const { values, troubled, badName } = readQuery(raw);
  if (troubled.has('hb')) return 'error';
  const hb = values.get('hb');
  let own: Expect = 'ok';
  if (hb !== undefined) {
    if (!/^[0-9]+$/.test(hb) || Number(hb) < 500 || Number(hb) > 30000) return 'error';
    if (hb.startsWith('0')) own = 'either';
  }
  return badName || troubled.size ? 'either' : own;
}

/**
 * docs/rest.md: a parameter given twice is refused, badly percent-encoded queries are refused (the
 * request tests fix this), other query parameters are ignored. A problem only in an unknown
 * parameter may go either way.
 */
export function queryOracle(raw: string, required: { name: string; kind: IdKind }, optional?: { name: string; kind: IdKind }): Expect {
  const known = new Set([required.name, optional?.name]);
  const seen = new Map<string, string>();
  let unknownTrouble = false;
  for (const part of raw.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    const rawKey = eq < 0 ? part : part.slice(0, eq);
    const rawValue = eq < 0 ? '' : part.slice(eq + 1);
    let key: string;
    try {
      key = decodeURIComponent(rawKey.replace(/\+/g, ' '));
    } catch {
      unknownTrouble = true;
      continue;
    }
    let value: string;
    try {
      value = decodeURIComponent(rawValue.replace(/\+/g, ' '));
    } catch {
      if (known.has(key)) return 'error';
      unknownTrouble = true;
      continue;
    }
    if (seen.has(key)) {
      if (known.has(key)) return 'error';
      unknownTrouble = true;
    }
    seen.set(key, value);
  }
  const req = seen.get(required.name);
  if (req === undefined || !idListValid(req, required.kind)) return 'error';
  if (optional) {
    const opt = seen.get(optional.name);
    if (opt !== undefined && !idListValid(opt, optional.kind)) return 'error';
  }
  return unknownTrouble ? 'either' : 'ok';
}

/** The distinct IDs a valid list asks for, in order of first appearance. */
export function distinctIds(text: string): string[] {
  return [...new Set(text.split(','))];
}

/** Decoded value of one parameter in a query the oracle accepted. */
export function queryValue(raw: string, name: string): string | undefined {
  for (const part of raw.split('&')) {
    const eq = part.indexOf('=');
    try {
      if (decodeURIComponent((eq < 0 ? part : part.slice(0, eq)).replace(/\+/g, ' ')) === name) {
        return eq < 0 ? '' : decodeURIComponent(part.slice(eq + 1).replace(/\+/g, ' '));
      }
    } catch {
      // an unknown parameter with bad encoding
    }
  }
  return undefined;
}

/**
 * A query string for an ID-list route: the ID parameters (maybe missing, repeated, written with
 * an encoded name), unknown parameters, empty parts, bad percent-encoding and raw encoded bytes.
 */
export function idQuery(g: Gen, required: { name: string; kind: IdKind }, optional?: { name: string; kind: IdKind }): string {
  const parts: string[] = [];
  const encodeKey = (k: string) => g.one([
    [12, () => k],
    [1, () => k.split('').map((c) => hex(c.charCodeAt(0), false)).join('')],
    [1, () => k.toUpperCase()],
    [1, () => ` ${k}`.replace(' ', g.pick(['+', '%20']))],
  ]);
  const value = (kind: IdKind) => {
    const encoded = encodeComponent(g, idListText(g, kind));
    return g.one([
      [10, () => encoded],
      [2, () => percentGarbage(g, encoded)],
      [1, () => randomBytesEncoded(g, g.size(300))],
      [1, () => encoded + randomBytesEncoded(g, g.int(1, 8))],
    ]);
  };
  const param = (p: { name: string; kind: IdKind }) => `${encodeKey(p.name)}${g.chance(0.97) ? '=' : ''}${value(p.kind)}`;
  if (g.chance(0.9)) parts.push(param(required));
  if (optional && g.chance(0.4)) parts.push(param(optional));
  if (g.chance(0.12)) parts.push(param(required));
  if (optional && g.chance(0.05)) parts.push(param(optional));
  const unknown = g.size(4) - 1;
  for (let i = 0; i < unknown; i++) {
    const key = g.one([
      [3, () => encodeComponent(g, nastyString(g, 12) || 'x')],
      [1, () => g.pick(['s', 'sid', 'ids', 'id', 'mids', 'eids', 'l', 'hb', 'key', '__proto__', 'constructor', 'si[]', 'si%5B%5D'])],
      [1, () => percentGarbage(g, 'k')],
    ]);
    const v = g.one([
      [3, () => encodeComponent(g, nastyString(g, 40))],
      [1, () => randomBytesEncoded(g, g.size(100))],
      [1, () => percentGarbage(g, 'v')],
    ]);
    parts.push(g.chance(0.9) ? `${key}=${v}` : key);
  }
  for (let i = parts.length - 1; i > 0; i--) {
    const j = g.int(0, i);
    [parts[i], parts[j]] = [parts[j], parts[i]];
  }
  let q = parts.join('&');
  if (g.chance(0.1)) q = g.pick(['&', '&&', '=', '==&']) + q + g.pick(['', '&', '&&', '#']).replace('#', '%23');
  return q;
}

// ---- JSON text with raw tokens ----

/** A JSON token written as is: numbers JSON.stringify cannot write (1e400, -0, 1.0), duplicate keys. */
export class Raw {
  constructor(readonly text: string) {}
}

/** An object whose key/value pairs are written in order, repeats included. */
export class Pairs {
  constructor(readonly pairs: readonly (readonly [string, unknown])[]) {}
}

/** JSON text of a value that may hold Raw tokens and Pairs; absent (undefined) members are skipped. */
export function toJson(v: unknown): string {
  if (v instanceof Raw) return v.text;
  if (v instanceof Pairs) return '{' + v.pairs.filter(([, x]) => x !== undefined).map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`).join(',') + '}';
  if (Array.isArray(v)) return '[' + v.map((x) => (x === undefined ? 'null' : toJson(x))).join(',') + ']';
  if (v && typeof v === 'object') {
    return '{' + Object.entries(v).filter(([, x]) => x !== undefined).map(([k, x]) => `${JSON.stringify(k)}:${toJson(x)}`).join(',') + '}';
  }
  return JSON.stringify(v) ?? 'null';
}

export const RAW_NUMBERS = ['1e400', '-1e400', '-0', '1.0', '1e2', '9007199254740993', '18446744073709551616', '0.1e-400', '4294967296', '-1', '1.5', '0'];

/** A JSON value of a random type: the wrong type for whatever field it lands in, most of the time. */
export function anyValue(g: Gen, depth = 0): unknown {
  return g.one<unknown>([
    [2, () => null],
    [1, () => true],
    [1, () => false],
    [3, () => g.pick([0, 1, -1, 1.5, 2 ** 31, 2 ** 32, 2 ** 53, -(2 ** 53), 1e308, -1e-308, 0.1])],
    [2, () => new Raw(g.pick(RAW_NUMBERS))],
    [3, () => g.pick(NASTY_STRINGS)],
    [2, () => nastyString(g, 40)],
    [1, () => 'x'.repeat(g.int(501, 5000))],
    [depth < 3 ? 2 : 0, () => Array.from({ length: g.size(5) }, () => anyValue(g, depth + 1))],
    [depth < 3 ? 2 : 0, () => Object.fromEntries(Array.from({ length: g.size(4) }, () => [nastyString(g, 8), anyValue(g, depth + 1)]))],
    [1, () => deep(g, g.int(10, 3000))],
  ]);
}

/** Nested arrays or objects, `depth` levels deep, as raw JSON text. */
export function deep(g: Gen, depth: number): Raw {
  const kind = g.int(0, 2);
  if (kind === 0) return new Raw('['.repeat(depth) + ']'.repeat(depth));
  if (kind === 1) return new Raw('{"a":'.repeat(depth) + '1' + '}'.repeat(depth));
  return new Raw('[{"x":'.repeat(depth) + '0' + '}]'.repeat(depth));
}

/** Ways to break a JSON text: cut it, append garbage, a BOM inside it, flip a byte. */
export function corruptText(g: Gen, text: string): string {
  return g.one([
    [4, () => text.slice(0, g.int(0, Math.max(0, text.length - 1)))],
    [1, () => text + g.pick(['}', ']', ',', 'x', '\u0000', '{}', ' garbage'])],
    [1, () => text.slice(0, 1) + '\ufeff' + text.slice(1)],
    [1, () => text.replace(/[:,]/, '')],
    [1, () => text.replace(/"/, "'")],
    [1, () => {
      const at = g.int(0, text.length - 1);
      return text.slice(0, at) + String.fromCharCode(g.int(0, 127)) + text.slice(at + 1);
    }],
  ]);
}

/** Parses as the server does (UTF-8, then JSON), or undefined when that fails. */
export function parsed(body: Buffer | string): { value: unknown } | undefined {
  try {
    // The server ignores one leading byte-order mark (RFC 8259 allows it), on REST and on sockets.
    return { value: JSON.parse((typeof body === 'string' ? body : body.toString('utf8')).replace(/^\uFEFF/, '')) };
  } catch {
    return undefined;
  }
}

// ---- protobuf wire format, written by hand so every field can carry the wrong wire type ----

export function varint(n: bigint | number): Buffer {
  let v = BigInt.asUintN(64, BigInt(n));
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return Buffer.from(out);
}

export function pbField(field: number, wire: 0 | 1 | 2 | 5, payload: Buffer | number | bigint): Buffer {
  const tag = varint((field << 3) | wire);
  if (wire === 0) return Buffer.concat([tag, varint(Buffer.isBuffer(payload) ? payload.length : payload)]);
  const body = Buffer.isBuffer(payload) ? payload : varint(payload);
  if (wire === 2) return Buffer.concat([tag, varint(body.length), body]);
  const width = wire === 1 ? 8 : 4;
  return Buffer.concat([tag, body.subarray(0, width), Buffer.alloc(Math.max(0, width - body.length))]);
}

/** A structurally valid protobuf message whose fields have random numbers, wire types and contents. */
export function randomFields(g: Gen, maxField: number, depth = 0): Buffer {
  const n = g.size(6);
  const parts: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    const field = g.chance(0.9) ? g.int(1, maxField) : g.int(1, 536870911);
    const wire = g.pick([0, 1, 2, 2, 2, 5] as const);
    if (wire === 0) parts.push(pbField(field, 0, g.pick([0n, 1n, 2n, 7n, 127n, 128n, 2n ** 31n, 2n ** 32n, 2n ** 53n + 1n, 2n ** 63n, 2n ** 64n - 1n])));
    else if (wire === 2) {
      parts.push(pbField(field, 2, g.one([
        [3, () => wtf8(g.chance(0.5) ? goodMid(g) : nastyString(g, 30))],
        [2, () => g.bytes(g.size(40))],
        [depth < 3 ? 3 : 0, () => randomFields(g, maxField, depth + 1)],
      ])));
    } else parts.push(pbField(field, wire, g.bytes(8)));
  }
  return Buffer.concat(parts);
}

/** Valid protobuf bytes cut short, or extended with random bytes. */
export function cutOrExtend(g: Gen, bytes: Uint8Array): Buffer {
  const b = Buffer.from(bytes);
  return g.one([
    [3, () => b.subarray(0, g.int(0, Math.max(0, b.length - 1)))],
    [1, () => Buffer.concat([b, g.bytes(g.int(1, 64))])],
    [1, () => Buffer.concat([b.subarray(0, g.int(0, b.length)), g.bytes(g.int(1, 16))])],
    [1, () => {
      const c = Buffer.from(b);
      if (c.length) c[g.int(0, c.length - 1)] = g.int(0, 255);
      return c;
    }],
  ]);
}

/** Reads a varint at `at`; undefined when it runs off the end or past 10 bytes. */
function readVarint(b: Buffer, at: number): { value: bigint; next: number } | undefined {
  let value = 0n;
  for (let i = 0; i < 10; i++) {
    if (at + i >= b.length) return undefined;
    const byte = b[at + i];
    value |= BigInt(byte & 0x7f) << BigInt(7 * i);
    if (!(byte & 0x80)) return { value, next: at + i + 1 };
  }
  return undefined;
}

/**
 * A strict reading of `odds.v1.ClientMessage` (op = 1 string, id = 2 uint32, mids = 3 repeated
 * string): undefined unless the known fields have their declared wire types, strings are UTF-8,
 * and the bytes end cleanly; unknown fields are skipped as protobuf says.
 * Used only to tell which mutated frames might still be valid requests.
 */
export function decodeClientStrict(b: Buffer): { op: string; id: number; mids: string[] } | undefined {
  const out = { op: '', id: 0, mids: [] as string[] };
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  for (let at = 0; at < b.length; ) {
    const tag = readVarint(b, at);
    // A tag is a 32-bit varint with a field number from 1.
    if (!tag || tag.next - at > 5 || tag.value > 0xffffffffn || tag.value >> 3n === 0n) return undefined;
    at = tag.next;
    const field = Number(tag.value >> 3n);
    const wire = Number(tag.value & 7n);
    if (field === 2 && wire === 0) {
      const v = readVarint(b, at);
      if (!v) return undefined;
      out.id = Number(BigInt.asUintN(32, v.value));
      at = v.next;
    } else if ((field === 1 || field === 3) && wire === 2) {
      const len = readVarint(b, at);
      if (!len || len.next + Number(len.value) > b.length) return undefined;
      let s: string;
      try {
        s = utf8.decode(b.subarray(len.next, len.next + Number(len.value)));
      } catch {
        return undefined;
      }
      if (field === 1) out.op = s;
      else out.mids.push(s);
      at = len.next + Number(len.value);
    } else if (field === 1 || field === 2 || field === 3) {
      return undefined; // a known field with the wrong wire type
    } else if (wire === 0) {
      const v = readVarint(b, at);
      if (!v) return undefined;
      at = v.next;
    } else if (wire === 1 || wire === 5) {
      at += wire === 1 ? 8 : 4;
      if (at > b.length) return undefined;
    } else if (wire === 2) {
      const len = readVarint(b, at);
      if (!len || len.next + Number(len.value) > b.length) return undefined;
      at = len.next + Number(len.value);
    } else {
      return undefined; // groups
    }
  }
  return out;
}

export const CLIENT_OPS = ['subscribe', 'unsubscribe', 'ping'] as const;

/** docs/protocol.md, "Client to server": op, an unsigned 32-bit integer id, and for (un)subscribe 1 to 50 market IDs. */
export function clientMessageValid(m: unknown): boolean {
  if (!m || typeof m !== 'object' || Array.isArray(m)) return false;
  const { op, id, mids } = m as Record<string, unknown>;
  if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id > 0xffffffff) return false;
  if (!(CLIENT_OPS as readonly unknown[]).includes(op)) return false;
  if (op === 'ping') return true;
  return Array.isArray(mids) && mids.length >= 1 && mids.length <= MAX_IDS && mids.every(isMarketIdRule);
}

/** The id an ack to this JSON request must echo: its own when it is a valid id, else 0. */
export function ackIdOf(m: unknown): number {
  if (!m || typeof m !== 'object' || Array.isArray(m)) return 0;
  const id = (m as Record<string, unknown>).id;
  return typeof id === 'number' && Number.isInteger(id) && id >= 0 && id <= 0xffffffff ? id : 0;
}

// ---- ingest items ----

export interface Known {
  sis: number[];
  lis: number[];
  eids: number[];
  mids: string[];
}

/**
 * The last item of every structured batch: shaped right, but its market does not exist, so the
 * transaction refuses it after the items before it ran, and nothing of the batch is kept or
 * published. Generated market IDs never take this value: goodMid makes numeric IDs or random
 * strings, and this one is 30 fixed characters.
 */
export const SENTINEL = { kind: 'result', mid: 'fuzz-sentinel.no-such-market:0' };

type Obj = Record<string, unknown>;
const runnersOf = (g: Gen, n = g.int(1, 3)) => Array.from({ length: n }, (_, i) => ({ rid: i + 1, na: `Runner ${i + 1}` }));
/** A runner's book a runner market can have: back falling and lay rising, by the hundredth, either side of one price. */
function book(g: Gen): { b: number[][]; l: number[][] } {
  const at = g.int(110, 50000);
  const side = (best: number, step: number) => Array.from({ length: g.int(0, 3) }, (_, k) => [(best + step * k) / 100, g.int(1, 5000)]);
  return { b: side(at, -1), l: side(at + 1, 1) };
}

/** A valid item of each kind, aimed at real rows half the time so the write path runs. */
export function ingestTemplate(g: Gen, known: Known): Obj {
  const si = g.chance(0.5) ? g.pick(known.sis) : g.int(1000, 9999);
  const li = g.chance(0.5) ? g.pick(known.lis) : g.int(100000, 999999);
  const eid = g.chance(0.5) ? g.pick(known.eids) : g.int(90000000, 99999999);
  const mid = g.chance(0.5) ? g.pick(known.mids) : goodMid(g);
  return g.one<Obj>([
    [1, () => ({ kind: 'sport', si, na: 'Fuzz', a: true })],
    [1, () => ({ kind: 'league', li, si, na: 'Fuzz League' })],
    [2, () => ({ kind: 'event', eid, na: 'A v B', st: '2030-01-01T19:00:00.000Z', go: false, ip: false, si, li, tv: null, le: 'Fuzz League' })],
    [2, () => ({ kind: 'market', mid, eid, na: 'Match Odds', ty: 'match-odd', s: true, go: false, rt: false, r: runnersOf(g) })],
    [1, () => ({ kind: 'market', mid, eid, na: 'Top Scorer', ty: 'player-race', s: true, go: false, rt: false,
      m: [{ mid: `${mid.slice(0, 60)}.1`, s: true, go: false, r: runnersOf(g), if: null }] })],
    [1, () => ({ kind: 'market', mid, eid, na: 'Ball', ty: 'ball-by-ball', s: true, go: false, rt: false, bl: 1.1 })],
    [1, () => ({ kind: 'market', mid, eid, na: 'Session', ty: 'session', di: g.int(1, 99), if: { line: 10 } })],
    [1, () => ({ kind: 'market', mid, s: g.chance(0.5) })],
    [1, () => ({ kind: 'event', eid, ip: true, tv: '<iframe src="x"></iframe>' })],
    [2, () => ({ kind: 'result', mid, res: '1', rt: false, ia: false })],
    [1, () => ({ kind: 'result', mid, res: '1,2', cert: g.pick(['provisional', 'confirmed']), at: 1795313378336,
      rs: [{ rid: 1, st: 'WINNER', dh: 0.5 }, { rid: 2, st: 'WINNER', dh: 0.5 }, { rid: 3, st: 'REMOVED', vf: 1 }] })],
    [1, () => ({ kind: 'terms', mid, bd: g.int(0, 10), tip: true, sus: 1795313378336, bt: 'ODDS', nw: g.int(1, 3), ewd: 4, bsp: true, cc: 'GB',
      ven: 'Ascot', race: 'Flat', mbr: 5, reg: ['GBR'], lmin: 0, lmax: 100, lint: 0.5, r: [{ rid: 1, st: 'REMOVED', af: 12.5, rd: 1795313378336, hc: 0 }] })],
    [3, () => ({ kind: 'odds', mid, ts: 1795313378336, st: g.pick(['OPEN', 'SUSPENDED', 'BALL_RUNNING', 'CLOSED']), ip: true,
      r: Array.from({ length: g.int(1, 3) }, (_, i) => ({ rid: i + 1, st: 'ACTIVE', ...book(g) })) })],
    [1, () => ({ kind: 'stale', mid, why: g.pick(['late', 'unreliable']) })],
    [1, () => ({ kind: 'suspend', eid, sr: g.pick(['goal', 'wicket', 'VAR', 'ball running']), ts: 1795313378336, tys: ['match-odd'] })],
  ]);
}

/** Values of the right JSON type that still mean trouble: NUL, surrogates, out-of-range numbers, impossible dates. */
export function typedTrouble(g: Gen, key: string, current: unknown): unknown {
  if (key === 'st' && typeof current === 'string' && current.includes('T')) {
    return g.pick(['0000-01-01T00:00:00Z', '0001-01-01T00:00:00+14:00', '9999-12-31T23:59:59-23:59', '2030-02-30T00:00:00Z', '2030-13-01T00:00:00Z',
      '2030-01-01T24:00:00Z', '2030-01-01T00:00:00', '2030-01-01', '+275760-09-13T00:00:00Z', '2030-01-01T00:00:00.0000000000001Z', '2030-01-01T00:00:60Z',
      '2030-01-01t00:00:00z', '２０３０-01-01T00:00:00Z']);
  }
  if (key === 'if') return g.one<unknown>([[2, () => deep(g, g.int(100, 30000))], [1, () => 'a\u0000b'], [1, () => ({ k: '\u0000' })], [1, () => '\ud800'], [1, () => anyValue(g)]]);
  if (typeof current === 'string') {
    return g.one<unknown>([
      [3, () => g.pick(['a\u0000b', '\u0000', '\ud800', 'x\udfff', '\ufeff', '\u202e', '😀'])],
      [1, () => 'x'.repeat(g.pick([500, 501, 4096, 4097, 100000]))],
      [1, () => nastyString(g, 60)],
    ]);
  }
  if (typeof current === 'number') {
    return g.one<unknown>([
      [3, () => g.pick([0, -1, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53 - 1, -(2 ** 53) + 1, 1.5, 1e308, -1e308, 5e-324])],
      [2, () => new Raw(g.pick(['1e400', '-1e400', '-0', '9007199254740993', '1.0', '1e2']))],
    ]);
  }
  return anyValue(g);
}

/** Every path to a leaf or member of a JSON value, e.g. ['r', 0, 'rid']. */
function paths(v: unknown, at: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [at];
  if (v instanceof Raw || v instanceof Pairs) return out;
  if (Array.isArray(v)) v.forEach((x, i) => out.push(...paths(x, [...at, i])));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(...paths(x, [...at, k]));
  return out;
}

/** One to three mutations: a wrong type, a troublesome value of the right type, a removed or an unknown key. */
export function mutateItem(g: Gen, item: Obj): unknown {
  let root: unknown = structuredClone(item);
  for (let n = g.int(1, 3); n > 0; n--) {
    const all = paths(root);
    const path = g.pick(all);
    if (path.length === 0) {
      root = g.chance(0.5) ? anyValue(g) : [root];
      continue;
    }
    let parent = root as Obj;
    for (const k of path.slice(0, -1)) parent = parent[k as string] as Obj;
    const key = path[path.length - 1];
    const current = parent[key as string];
    g.one<void>([
      [4, () => { parent[key as string] = anyValue(g); }],
      [4, () => { parent[key as string] = typedTrouble(g, String(key), current); }],
      [1, () => { if (Array.isArray(parent)) parent.splice(key as number, 1); else delete parent[key as string]; }],
      [1, () => { if (!Array.isArray(parent)) parent[nastyString(g, 10) || '__proto__'] = anyValue(g); }],
      [1, () => { if (Array.isArray(parent)) parent.push((current instanceof Raw ? current : structuredClone(current)) as never); }],
    ]);
  }
  return root;
}

/** docs/ingest.md: anything that is not an object with a known kind refuses the batch without any write (only odds and stale items are refused alone). */
export function mayBeValidItem(v: unknown): boolean {
  return !!v && typeof v === 'object' && !Array.isArray(v) && (INGEST_KINDS as readonly unknown[]).includes((v as Obj).kind);
}

/** A valid item with one value swapped for a troublesome one of the same JSON type: the kind that passes validation. */
export function troubleItem(g: Gen, known: Known): unknown {
  const item = ingestTemplate(g, known);
  const leaves = paths(item).filter((p) => {
    if (p.length === 0 || p[0] === 'kind') return false;
    let v: unknown = item;
    for (const k of p) v = (v as Obj)[k as string];
    return typeof v === 'string' || typeof v === 'number' || p[p.length - 1] === 'if';
  });
  if (!leaves.length) return item;
  const path = g.pick(leaves);
  let parent = item as Obj;
  for (const k of path.slice(0, -1)) parent = parent[k as string] as Obj;
  const key = path[path.length - 1] as string;
  parent[key] = typedTrouble(g, key, parent[key]);
  return item;
}

// ---- /ws client messages ----

/** 1 to 50 market IDs with bad ones mixed in: wrong types, bad characters, too long. */
function midsList(g: Gen): unknown[] {
  const n = g.int(1, 50);
  const pBad = g.pick([0.02, 0.2, 1]);
  return Array.from({ length: n }, () => (g.chance(pBad) ? (g.chance(0.6) ? badMid(g) : anyValue(g)) : goodMid(g)));
}

/** A JSON request with a wrong type or bad value in some field, as the bytes of a text frame. */
export function clientJson(g: Gen): Buffer {
  const op = g.one<unknown>([
    [4, () => g.pick(CLIENT_OPS)],
    [2, () => g.pick(['SUBSCRIBE', 'Subscribe', 'sub', 'unsub', 'pong', 'ack', 'odds', '', ' subscribe', 'subscribe\u0000', 'ping '])],
    [2, () => anyValue(g)],
    [1, () => undefined],
  ]);
  const id = g.one<unknown>([
    [4, () => g.int(0, 2 ** 32 - 1)],
    [2, () => new Raw(g.pick(['-1', '4294967296', '1.5', '1e400', '-0', '1.0', '1e2', '9007199254740993', '-4294967295', '0.0000001']))],
    [2, () => anyValue(g)],
    [1, () => undefined],
  ]);
  const mids = g.one<unknown>([
    [1, () => undefined],
    [2, () => anyValue(g)],
    [5, () => midsList(g)],
    [1, () => Array.from({ length: g.int(51, 3000) }, () => goodMid(g))],
    [1, () => []],
    [1, () => [midsList(g)]],
  ]);
  const pairs: [string, unknown][] = [['op', op], ['id', id], ['mids', mids]];
  if (g.chance(0.1)) pairs.push([g.pick(['op', 'id', 'mids']), anyValue(g)]);
  if (g.chance(0.1)) pairs.push([nastyString(g, 10) || '__proto__', anyValue(g)]);
  for (let i = pairs.length - 1; i > 0; i--) {
    const j = g.int(0, i);
    [pairs[i], pairs[j]] = [pairs[j], pairs[i]];
  }
  const text = toJson(new Pairs(pairs));
  return Buffer.from(g.one<string>([
    [10, () => text],
    [2, () => corruptText(g, text)],
    [1, () => `[${text}]`],
    [1, () => toJson(anyValue(g))],
    [1, () => nastyString(g, 100)],
    [1, () => toJson(deep(g, g.int(10, 20000)))],
    [1, () => ` \n\t${text}\r\n `],
  ]), 'utf8');
}

/** An `odds.v1.ClientMessage` written field by field (op 1, id 2, mids 3), in the order given. */
export function clientPb(op: string | undefined, id: number | undefined, mids: string[]): Buffer {
  return Buffer.concat([
    ...(op === undefined ? [] : [pbField(1, 2, wtf8(op))]),
    ...(id === undefined ? [] : [pbField(2, 0, id)]),
    ...mids.map((m) => pbField(3, 2, wtf8(m))),
  ]);
}

/** A binary request: bad content, cut or extended, fields of the wrong wire type, random fields and bytes. */
export function clientBinary(g: Gen): Buffer {
  const op = () => g.one<string | undefined>([[5, () => g.pick(['subscribe', 'unsubscribe'])], [2, () => nastyString(g, 12)], [1, () => undefined], [1, () => 'ping\u0000']]);
  const mids = () => g.one<string[]>([
    [5, () => midsList(g).map((m) => (typeof m === 'string' ? m : toJson(m)))],
    [1, () => Array.from({ length: g.int(51, 3000) }, () => goodMid(g))],
    [1, () => []],
  ]);
  return g.one<Buffer>([
    [4, () => clientPb(op(), g.chance(0.9) ? g.int(0, 2 ** 32 - 1) : undefined, mids())],
    [4, () => cutOrExtend(g, clientPb(op(), g.int(0, 2 ** 32 - 1), mids()))],
    [2, () => {
      // Every field with a wire type other than its own.
      const fields = [
        pbField(1, g.pick([0, 1, 5] as const), g.chance(0.5) ? g.bytes(8) : g.int(0, 1000)),
        pbField(2, g.pick([1, 2, 5] as const), g.chance(0.5) ? wtf8(String(g.int(0, 100))) : g.int(0, 1000)),
        pbField(3, g.pick([0, 1, 5] as const), g.chance(0.5) ? g.bytes(4) : g.int(0, 1000)),
      ].filter(() => g.chance(0.8));
      if (g.chance(0.5)) fields.reverse();
      return Buffer.concat(fields);
    }],
    [1, () => Buffer.concat([clientPb(op(), g.int(0, 100), []), pbField(2, 0, 2n ** 64n - 1n), pbField(2, 0, 2n ** 32n)])],
    [2, () => randomFields(g, 4)],
    [2, () => g.bytes(g.size(500))],
  ]);
}
