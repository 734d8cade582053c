/**
 * Counts of a protobuf IngestBatch read off the wire, before it is decoded:
 * a 1 MiB body of two-byte empty runners would otherwise become half a
 * million objects before the item checks could refuse it. Only tags and
 * lengths are read; nothing is built. Field numbers are proto/odds.proto's.
 */
import protobuf from 'protobufjs/minimal.js';
import { INGEST_LIMITS } from './messages.js';

const LEN = 2;
const FIXED64 = 1;

class TooMany extends Error {}

/** Calls `fn` for each field of the message from the reader's position to `end`; `fn` must read or skip its value. */
function fields(r: protobuf.Reader, end: number, fn: (field: number, wire: number) => boolean): void {
  while (r.pos < end) {
    const tag = r.uint32();
    if (!fn(tag >>> 3, tag & 7)) r.skipType(tag & 7);
  }
}

/** The message starting at the reader's position (a length-delimited field), its fields counted by `fn`. */
function within(r: protobuf.Reader, fn: (field: number, wire: number) => boolean): void {
  const len = r.uint32();
  fields(r, r.pos + len, fn);
}

function counter(limit: number, field: string, unit: string) {
  let n = 0;
  return () => {
    if (++n > limit) throw new TooMany(`${field} holds more than ${limit} ${unit}; the limit is ${limit} (counted before decoding)`);
  };
}

/** Ladder prices and sizes of one side: packed (8 bytes each) or one per tag. */
function levels(r: protobuf.Reader, wire: number, count: () => void): void {
  if (wire === FIXED64) {
    r.skip(8);
    count();
    return;
  }
  const len = r.uint32();
  for (let i = 0; i < len / 8; i++) count();
  r.skip(len);
}

function odds(r: protobuf.Reader, at: string): void {
  const runner = counter(INGEST_LIMITS.runners, `${at}.r`, 'runners');
  within(r, (f, w) => {
    if (f !== 5 || w !== LEN) return false;
    runner();
    // Each level is a price and a size, so a side holds twice as many numbers.
    const b = counter(2 * INGEST_LIMITS.levels, `${at}.r[].b`, `numbers (${INGEST_LIMITS.levels} levels of price and size)`);
    const l = counter(2 * INGEST_LIMITS.levels, `${at}.r[].l`, `numbers (${INGEST_LIMITS.levels} levels of price and size)`);
    within(r, (g, v) => {
      if ((g !== 3 && g !== 4) || (v !== LEN && v !== FIXED64)) return false;
      levels(r, v, g === 3 ? b : l);
      return true;
    });
    return true;
  });
}

function market(r: protobuf.Reader, at: string): void {
  const runner = counter(INGEST_LIMITS.runners, `${at}.r`, 'runners');
  const nested = counter(INGEST_LIMITS.nested, `${at}.m`, 'nested markets');
  within(r, (f, w) => {
    if (w !== LEN) return false;
    if (f === 12) runner();
    if (f !== 14) return false;
    nested();
    const inner = counter(INGEST_LIMITS.runners, `${at}.m[].r`, 'runners');
    within(r, (g, v) => {
      if (g === 4 && v === LEN) inner();
      return false;
    });
    return true;
  });
}

/**
 * A message whose one list of runners (field `list`) is counted: a result's `rs`, a terms
 * item's `r`, and within its `terms` (field 2) the MarketTerms' `r` (16).
 */
function runnerList(r: protobuf.Reader, at: string, list: number, name: string): void {
  const runner = counter(INGEST_LIMITS.runners, `${at}.${name}`, 'runners');
  within(r, (f, w) => {
    if (w !== LEN) return false;
    if (f === list) runner();
    if (list !== 4 || f !== 2) return false;
    const inner = counter(INGEST_LIMITS.runners, `${at}.terms.r`, 'runners');
    within(r, (g, v) => {
      if (g === 16 && v === LEN) inner();
      return false;
    });
    return true;
  });
}

/** The first count over its limit, in words naming the item and the limit; undefined when all fit. Throws on a malformed batch. */
export function overLimit(bytes: Uint8Array, maxItems: number): string | undefined {
  const r = protobuf.Reader.create(bytes);
  const item = counter(maxItems, 'data', 'items');
  let i = 0;
  try {
    fields(r, r.len, (f, w) => {
      if (f !== 1 || w !== LEN) return false;
      item();
      const at = `data[${i++}]`;
      within(r, (g, v) => {
        if (v !== LEN || ![4, 5, 6, 8].includes(g)) return false;
        if (g === 4) market(r, `${at}.market`);
        else if (g === 5) runnerList(r, `${at}.result`, 8, 'rs');
        else if (g === 8) runnerList(r, `${at}.terms`, 4, 'r');
        else odds(r, `${at}.odds`);
        return true;
      });
      return true;
    });
  } catch (e) {
    if (e instanceof TooMany) return e.message;
    throw e;
  }
  return undefined;
}
