/** Field number 2 below is `ClientMessage.id`, and `IngestBatch.id`, in proto/odds.proto. */
import protobuf from 'protobufjs/minimal.js';

const VARINT = 0;

/** `{"id":N` or `{"op":"...","id":N` at the very start: where every client puts it. */
const JSON_ID = /^\s*\{\s*(?:"op"\s*:\s*"[a-z]{0,16}"\s*,\s*)?"id"\s*:\s*(\d{1,10})\s*[,}]/;
const PEEK_BYTES = 64;

/**
 * A request's id read from its first bytes only, for refusing it unread: a
 * JSON id as the first key or right after `op`, a protobuf id among the first
 * fields. 0 when it is not there. Constant cost, whatever the message's size.
 */
export function peekId(data: ArrayBuffer, isBinary: boolean): number {
  const head = new Uint8Array(data, 0, Math.min(data.byteLength, PEEK_BYTES));
  if (!isBinary) {
    const m = JSON_ID.exec(Buffer.from(head.buffer, head.byteOffset, head.byteLength).toString('latin1'));
    const id = m ? Number(m[1]) : 0;
    return id <= 0xffffffff ? id : 0;
  }
  try {
    const r = protobuf.Reader.create(head);
    for (let fields = 0; fields < 2 && r.pos < r.len; fields++) {
      const tag = r.uint32();
      if (tag === ((2 << 3) | VARINT)) return r.uint32();
      r.skipType(tag & 7);
    }
  } catch {
    // cut off within the first bytes: no id to give
  }
  return 0;
}

/**
 * An `/ingest` protobuf batch's id, for refusing it unread: `IngestBatch.id` comes after its items
 * (`data`, field 1) as every encoder writes it, so it is looked for past them, each item skipped by
 * its length, never read. At most `maxFields` fields are looked at (a batch of more items is
 * refused anyway); 0 when the id is not among them or the message is cut short.
 */
export function peekBatchId(data: ArrayBuffer, maxFields: number): number {
  let id = 0;
  try {
    const r = protobuf.Reader.create(new Uint8Array(data));
    for (let fields = 0; fields < maxFields && r.pos < r.len; fields++) {
      const tag = r.uint32();
      // The last one given is the field's value, as a decoder reads it.
      if (tag === ((2 << 3) | VARINT)) id = r.uint32();
      else r.skipType(tag & 7);
    }
  } catch {
    return 0;
  }
  return id;
}
