/**
 * What a protobuf ClientMessage holds, read off the wire without decoding it:
 * enough to refuse an oversized `since.seqs` map before protobufjs builds it.
 * Field numbers are proto/odds.proto's.
 */
import protobuf from 'protobufjs/minimal.js';

const LEN = 2;
const VARINT = 0;

interface ClientCounts {
  /** The id field, when it is there as a valid varint (so a refusal can echo it); 0 otherwise. */
  id: number;
  /** Entries of `mids` (before duplicates collapse: an upper bound). */
  mids: number;
  /** Whether `eids` or `sis` is present. */
  filters: boolean;
  /** Entries of `since.seqs`. */
  seqs: number;
}

/** Throws on a malformed message, as decoding it would. */
export function countClient(bytes: Uint8Array): ClientCounts {
  const r = protobuf.Reader.create(bytes);
  const out: ClientCounts = { id: 0, mids: 0, filters: false, seqs: 0 };
  while (r.pos < r.len) {
    const tag = r.uint32();
    const field = tag >>> 3;
    const wire = tag & 7;
    if (field === 2 && wire === VARINT) out.id = r.uint32();
    else if (field === 4 && wire === LEN) {
      const end = r.uint32() + r.pos;
      while (r.pos < end) {
        const inner = r.uint32();
        if (inner >>> 3 === 2) out.seqs++;
        r.skipType(inner & 7);
      }
    } else {
      if (field === 3) out.mids++;
      if (field === 5 || field === 6) out.filters = true;
      r.skipType(wire);
    }
  }
  return out;
}
