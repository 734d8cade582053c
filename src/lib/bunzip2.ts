/**
 * bzip2 decompression whose memory is bounded by the format's block, never by the output:
 *
 *   for await (const chunk of bunzip2(createReadStream(file))) ...
 *
 * A block is at most 900,000 bytes before its run-length stage; the decoder holds one block's
 * compressed bits (read ahead as far as the block needs, at most about 2.3 MB) and its
 * Burrows-Wheeler vector (4 bytes a symbol, grown as the block needs, at most 3.6 MB), and hands
 * out the block's output in chunks of `chunkBytes` as the reader pulls them. The run-length stage
 * can turn 900,000 symbols into about 45 MB, so a block of a few hundred compressed bytes may stand
 * for hundreds of megabytes: those are produced only as fast as they are read, and a reader that
 * stops reading stops the decoder. Each block's CRC and the stream's are checked; concatenated
 * streams (as pbzip2 writes) are read on; anything after the last stream that is not another is
 * ignored, as bzip2 itself does. Randomised blocks (written only by bzip2 before 0.9.5, 1999) are
 * refused.
 */
export class Bunzip2Error extends Error {}

/** Thrown inside a block's decoding when its bits run past what has been read. */
class NeedInput extends Error {}

const BLOCK_MAGIC = [0x314159, 0x265359];
const END_MAGIC = [0x177245, 0x385090];
/** Compressed bytes read ahead before a block is first tried; doubled while it needs more. */
const FIRST_READ = 256 * 1024;
/** The most one block can take: 900,001 symbols of at most 20 bits, plus its tables. */
const MAX_BLOCK_INPUT = 2_300_000;
const MAX_CODE_LEN = 23;
const MAX_GROUPS = 6;
const GROUP_SIZE = 50;
const RUNA = 0;
const RUNB = 1;

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 24;
    for (let k = 0; k < 8; k++) c = c & 0x80000000 ? (c << 1) ^ 0x04c11db7 : c << 1;
    table[i] = c >>> 0;
  }
  return table;
})();

/** The compressed bits, read from the source as far as the current block needs. */
class BitInput {
  private buf = Buffer.alloc(0);
  private pos = 0;
  private acc = 0;
  private count = 0;
  private ended = false;

  constructor(private readonly source: AsyncIterator<Buffer | string>) {}

  /** Whether `bytes` more can be read, reading on until they can or the source ends. */
  async fill(bytes: number): Promise<boolean> {
    while (this.buf.length - this.pos < bytes && !this.ended) {
      const next = await this.source.next();
      if (next.done) this.ended = true;
      else this.buf = Buffer.concat([this.buf, Buffer.from(next.value)]);
    }
    return this.buf.length - this.pos + Math.floor(this.count / 8) >= bytes;
  }

  bits(n: number): number {
    while (this.count < n) {
      if (this.pos >= this.buf.length) throw new NeedInput();
      this.acc = ((this.acc & ((1 << this.count) - 1)) << 8) | this.buf[this.pos++];
      this.count += 8;
    }
    this.count -= n;
    return (this.acc >>> this.count) & ((1 << n) - 1);
  }

  bits32(): number {
    return ((this.bits(16) << 16) | this.bits(16)) >>> 0;
  }

  /** Drops the bits up to the next byte boundary (streams start on one). */
  align(): void {
    this.count -= this.count % 8;
  }

  /** Runs one block's decoding over the bits, reading further ahead and starting it again while it runs out. */
  async attempt<T>(decode: () => T): Promise<T> {
    // Only what the block to come needs is kept.
    this.buf = this.buf.subarray(this.pos);
    this.pos = 0;
    for (let want = FIRST_READ; ; want *= 2) {
      await this.fill(want);
      const saved = { pos: this.pos, acc: this.acc, count: this.count };
      try {
        return decode();
      } catch (err) {
        if (!(err instanceof NeedInput)) throw err;
        Object.assign(this, saved);
        if (this.ended) throw new Bunzip2Error('the data ends inside a block (a truncated file)');
        if (want >= MAX_BLOCK_INPUT) throw new Bunzip2Error('a block longer than bzip2 writes (damaged data)');
      }
    }
  }
}

interface Table {
  minLen: number;
  limit: Int32Array;
  base: Int32Array;
  perm: Int32Array;
}

/** Canonical Huffman decoding tables, as bzip2 builds them from code lengths. */
function table(lengths: Uint8Array, alphaSize: number): Table {
  let minLen = 32;
  let maxLen = 0;
  for (let i = 0; i < alphaSize; i++) {
    minLen = Math.min(minLen, lengths[i]);
    maxLen = Math.max(maxLen, lengths[i]);
  }
  const perm = new Int32Array(258);
  const base = new Int32Array(MAX_CODE_LEN + 1);
  const limit = new Int32Array(MAX_CODE_LEN + 1);
  let pp = 0;
  for (let i = minLen; i <= maxLen; i++) for (let j = 0; j < alphaSize; j++) if (lengths[j] === i) perm[pp++] = j;
  for (let i = 0; i < alphaSize; i++) base[lengths[i] + 1]++;
  for (let i = 1; i < base.length; i++) base[i] += base[i - 1];
  let vec = 0;
  for (let i = minLen; i <= maxLen; i++) {
    vec += base[i + 1] - base[i];
    limit[i] = vec - 1;
    vec <<= 1;
  }
  for (let i = minLen + 1; i <= maxLen; i++) base[i] = ((limit[i - 1] + 1) << 1) - base[i];
  return { minLen, limit, base, perm };
}

interface Block {
  crc: number;
  origPtr: number;
  length: number;
}

const damaged = (why: string) => new Bunzip2Error(`damaged data: ${why}`);

/** One block, from its CRC to its end, into `tt` (grown as needed): the byte in the low 8 bits, the next position above. */
function decodeBlock(input: BitInput, blockMax: number, holder: { tt: Uint32Array }): Block {
  const crc = input.bits32();
  if (input.bits(1)) throw new Bunzip2Error('a randomised block (written by bzip2 before 0.9.5) cannot be read');
  const origPtr = input.bits(24);
  const symbols = new Uint8Array(256);
  let inUse = 0;
  const used = input.bits(16);
  for (let i = 0; i < 16; i++) {
    if (!(used & (0x8000 >> i))) continue;
    const k = input.bits(16);
    for (let j = 0; j < 16; j++) if (k & (0x8000 >> j)) symbols[inUse++] = i * 16 + j;
  }
  if (!inUse) throw damaged('a block uses no byte values');
  const alphaSize = inUse + 2;
  const groups = input.bits(3);
  const selectorCount = input.bits(15);
  if (groups < 2 || groups > MAX_GROUPS || !selectorCount) throw damaged('bad Huffman group counts');
  const order = Array.from({ length: groups }, (_, i) => i);
  const selectors = new Uint8Array(selectorCount);
  for (let i = 0; i < selectorCount; i++) {
    let j = 0;
    while (input.bits(1)) if (++j >= groups) throw damaged('a selector past the groups');
    const v = order[j];
    order.splice(j, 1);
    order.unshift(v);
    selectors[i] = v;
  }
  const tables: Table[] = [];
  for (let t = 0; t < groups; t++) {
    const lengths = new Uint8Array(alphaSize);
    let len = input.bits(5);
    for (let i = 0; i < alphaSize; i++) {
      for (;;) {
        if (len < 1 || len > 20) throw damaged('a code length out of range');
        if (!input.bits(1)) break;
        len += input.bits(1) ? -1 : 1;
      }
      lengths[i] = len;
    }
    tables.push(table(lengths, alphaSize));
  }

  const end = inUse + 1;
  const mtf = new Uint8Array(256).map((_, i) => i);
  const counts = new Int32Array(256);
  let tt = holder.tt;
  let length = 0;
  let group = -1;
  let left = 0;
  let current = tables[0];
  const next = (): number => {
    if (!left) {
      if (++group >= selectorCount) throw damaged('more symbols than selectors');
      current = tables[selectors[group]];
      left = GROUP_SIZE;
    }
    left--;
    let n = current.minLen;
    let v = input.bits(n);
    while (v > current.limit[n]) {
      if (++n > 20) throw damaged('a Huffman code longer than 20 bits');
      v = (v << 1) | input.bits(1);
    }
    const i = v - current.base[n];
    if (i < 0 || i >= 258) throw damaged('a Huffman code out of range');
    return current.perm[i];
  };
  const room = (n: number) => {
    if (length + n > blockMax) throw damaged(`a block longer than ${blockMax} bytes`);
    if (length + n <= tt.length) return;
    const grown = new Uint32Array(Math.min(blockMax, Math.max(length + n, tt.length * 2)));
    grown.set(tt.subarray(0, length));
    holder.tt = tt = grown;
  };
  let sym = next();
  while (sym !== end) {
    if (sym === RUNA || sym === RUNB) {
      let run = 0;
      for (let n = 1; sym === RUNA || sym === RUNB; n <<= 1) {
        if (n > blockMax) throw damaged('a run longer than a block');
        run += (sym + 1) * n;
        sym = next();
      }
      const byte = symbols[mtf[0]];
      room(run);
      counts[byte] += run;
      tt.fill(byte, length, length + run);
      length += run;
      continue;
    }
    const at = sym - 1;
    if (at >= inUse) throw damaged('a symbol past those in use');
    const v = mtf[at];
    mtf.copyWithin(1, 0, at);
    mtf[0] = v;
    const byte = symbols[v];
    room(1);
    counts[byte]++;
    tt[length++] = byte;
    sym = next();
  }
  if (origPtr >= length) throw damaged('the block\'s origin is past its end');
  // The inverse Burrows-Wheeler transform: each entry learns where the next byte is.
  const start = new Int32Array(256);
  for (let i = 1; i < 256; i++) start[i] = start[i - 1] + counts[i - 1];
  for (let i = 0; i < length; i++) {
    const byte = tt[i] & 0xff;
    tt[start[byte]++] |= i << 8;
  }
  return { crc, origPtr, length };
}

/** A block's output in chunks: the transform followed, runs of four then a count expanded, the CRC checked at the end. */
function* output(tt: Uint32Array, block: Block, chunkBytes: number): Generator<Buffer, number> {
  let out = Buffer.allocUnsafe(chunkBytes);
  let n = 0;
  let crc = 0xffffffff;
  let pos = tt[block.origPtr] >>> 8;
  let last = -1;
  let run = 0;
  for (let i = 0; i < block.length; i++) {
    const entry = tt[pos];
    let byte = entry & 0xff;
    pos = entry >>> 8;
    let times = 1;
    if (run === 4) {
      // After four equal bytes comes how many more of them.
      times = byte;
      byte = last;
      run = 0;
    } else {
      run = byte === last ? run + 1 : 1;
      last = byte;
    }
    for (let k = 0; k < times; k++) crc = (crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ byte) & 0xff];
    while (times) {
      const k = Math.min(times, chunkBytes - n);
      if (k === 1) out[n] = byte;
      else out.fill(byte, n, n + k);
      n += k;
      times -= k;
      if (n === chunkBytes) {
        yield out;
        out = Buffer.allocUnsafe(chunkBytes);
        n = 0;
      }
    }
  }
  if (n) yield out.subarray(0, n);
  const got = ~crc >>> 0;
  if (got !== block.crc) throw damaged(`a block's CRC is ${got.toString(16)} where it should be ${block.crc.toString(16)}`);
  return got;
}

export async function* bunzip2(source: AsyncIterable<Buffer | string>, chunkBytes = 64 * 1024): AsyncGenerator<Buffer> {
  const from = source[Symbol.asyncIterator]();
  try {
    yield* streams(new BitInput(from), chunkBytes);
  } finally {
    // A reader that stops early (or a damaged block) closes the source too.
    await from.return?.();
  }
}

async function* streams(input: BitInput, chunkBytes: number): AsyncGenerator<Buffer> {
  const holder = { tt: new Uint32Array(64 * 1024) };
  for (let streams = 0; ; streams++) {
    if (!(await input.fill(4))) {
      if (streams) return;
      throw new Bunzip2Error('not bzip2 data: it is empty');
    }
    const header = await input.attempt(() => [input.bits(8), input.bits(8), input.bits(8), input.bits(8)]);
    const [b, z, h, level] = header;
    if (b !== 0x42 || z !== 0x5a || h !== 0x68 || level < 0x31 || level > 0x39) {
      if (streams) return;
      throw new Bunzip2Error('not bzip2 data: it does not start with "BZh" and a block size');
    }
    const blockMax = (level - 0x30) * 100_000;
    let combined = 0;
    for (;;) {
      const block = await input.attempt(() => {
        const magic = [input.bits(24), input.bits(24)];
        if (magic[0] === END_MAGIC[0] && magic[1] === END_MAGIC[1]) return input.bits32();
        if (magic[0] !== BLOCK_MAGIC[0] || magic[1] !== BLOCK_MAGIC[1]) throw damaged('a block does not start where the last one ended');
        return decodeBlock(input, blockMax, holder);
      });
      if (typeof block === 'number') {
        if (block !== combined) throw damaged('the stream\'s CRC does not match its blocks\'');
        input.align();
        break;
      }
      const crc: number = yield* output(holder.tt, block, chunkBytes);
      combined = (((combined << 1) | (combined >>> 31)) ^ crc) >>> 0;
    }
  }
}
