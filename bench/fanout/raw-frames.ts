/**
 * The raw fan-out client's reading side (raw-client.ts connects and answers the orchestrator):
 * WebSocket frames counted from their headers as the bytes arrive, payloads skipped except for
 * the first bytes that tell an odds frame from an ack (and, while tracking, its `mid` and `seq`),
 * the pong to a ping, and the read cycle that pauses every socket after a read and resumes all
 * every `cycleMs`.
 */
import type net from 'node:net';
import { constants, inflateRawSync } from 'node:zlib';

/** Bytes of an odds frame kept for reading its `mid` and `seq`: `{"op":"odds","mid":"…","epoch":"…","seq":…` fits. */
const HEAD = 128;

export interface State {
  sock: net.Socket;
  handshake: string | undefined;
  /** Header bytes of the frame being read. */
  hdr: Buffer;
  hdrLen: number;
  /** Payload bytes of the current frame still to come, and how far into it we are. */
  left: number;
  pos: number;
  opcode: number;
  /** RSV1 of the current frame: its payload is deflated. */
  deflated: boolean;
  /** Subscribe requests sent and not yet acked. */
  pendingAcks: number;
  /** The current compressed frame's payload, kept to be inflated while acks are pending. */
  compressed: Buffer[] | undefined;
  /** What the current frame is, once classified (counted when it ends). */
  kind: Kind;
  /** Odds frames this socket received whole. */
  odds: number;
  /** Its markets, and while tracking the `seq` of the last odds frame of each. */
  mids: string[];
  last: Map<string, number>;
  /** The current frame's `mid` and `seq` are read at its end (tracking a JSON data frame). */
  tracked: boolean;
  head: Buffer | undefined;
  /** Control frame payload (ping), kept to echo in the pong. */
  ctrl: number[] | undefined;
  paused: boolean;
  closed: boolean;
  /** Connects this socket's client again after a refusal that said when. */
  retry: ((ms: number) => void) | undefined;
  /** Opened by a resume: when its last ack arrives, the time since the resume began is recorded (`resumeTimes`). */
  timed: boolean;
  /** A timed socket's moments since the resume began: connect called, TCP connected, handshake answered. */
  moments: number[];
}

let paused: State[] = [];
let cycleMs = 0;
let cycleTimer: NodeJS.Timeout | undefined;
/** What every socket of this process received, for the `counts` answer. */
export const tally = {
  odds: 0,
  acks: 0,
  other: 0,
  closed: 0,
  reads: 0,
  bytes: 0,
  /** Sockets whose handshake answer accepted permessage-deflate. */
  deflating: 0,
  /** Refused handshakes that were retried, by status line. */
  refused: new Map<string, number>(),
};
/**
 * Per socket of the running resume, ms since it began: until the socket had every ack back, and
 * how long its TCP connect took (a SYN the server's full accept queue dropped is sent again after
 * 1 s, then 3 s, 7 s: a connect of a second or more was retried).
 */
export const resumeTimes = { t0: 0, acked: [] as number[], connects: [] as number[], slowest: [] as number[][] };
/** Past this many ms a socket's moments are kept (the slowest few), to tell where its time went. */
const SLOW_MS = 12_000;

/** `binary`: the sockets speak odds.v1.proto; `tracking`: read each JSON odds frame's `mid` and `seq`. */
export const mode = { binary: false, tracking: false };

const enum Kind { None, Odds, Ack, Other }

/** A client frame, masked with a zero key (allowed; the payload then goes as is). */
export function clientFrame(opcode: number, payload: Buffer): Buffer {
  const len = payload.length;
  const head = len < 126 ? Buffer.from([0x80 | opcode, 0x80 | len]) : Buffer.from([0x80 | opcode, 0x80 | 126, len >> 8, len & 0xff]);
  return Buffer.concat([head, Buffer.alloc(4), payload]);
}

/**
 * Which server message a frame is, from one byte: `{"op":"o...` (odds) or `{"op":"d...` (delta) in
 * JSON, field 2 (odds) or 8 (delta) in protobuf. Both are a market's update, counted alike.
 */
function classify(byte: number): Kind {
  if (mode.binary ? byte === 0x12 || byte === 0x42 : byte === 0x6f || byte === 0x64) return Kind.Odds;
  if (mode.binary ? byte === 0x0a : byte === 0x61) return Kind.Ack;
  return Kind.Other;
}
const CLASSIFY_AT = () => (mode.binary ? 0 : 7);

const QUOTE = 0x22;
const MID_AT = '{"op":"odds","mid":"'.length;
/** A delta frame's `mid` starts one byte later: `{"op":"delta","mid":"`. */
const DELTA = 0x64;
const SEQ_KEY = Buffer.from('"seq":');

/** Reads `mid` and `seq` from the head of a JSON odds or delta frame (keys in protocol order) into the socket's last seqs. */
function track(s: State, len: number): void {
  const h = s.head!;
  const midAt = h[CLASSIFY_AT()] === DELTA ? MID_AT + 1 : MID_AT;
  const midEnd = h.indexOf(QUOTE, midAt);
  const at = h.indexOf(SEQ_KEY, midEnd);
  if (midEnd < 0 || midEnd >= len || at < 0 || at >= len) return;
  let seq = 0;
  for (let i = at + SEQ_KEY.length; i < len && h[i] >= 0x30 && h[i] <= 0x39; i++) seq = seq * 10 + h[i] - 0x30;
  s.last.set(h.toString('latin1', midAt, midEnd), seq);
}

function frames(s: State, buf: Buffer, start: number, end: number): void {
  const at = CLASSIFY_AT();
  let i = start;
  while (i < end) {
    if (s.left > 0) {
      const take = Math.min(s.left, end - i);
      if (s.opcode === 1 || s.opcode === 2) {
        if (s.compressed) s.compressed.push(Buffer.from(buf.subarray(i, i + take)));
        else if (s.deflated) s.kind = Kind.Odds;
        else if (at >= s.pos && at < s.pos + take) s.kind = classify(buf[i + at - s.pos]);
        if (s.tracked && s.pos < HEAD) buf.copy(s.head!, s.pos, i, i + Math.min(take, HEAD - s.pos));
      } else if (s.ctrl) {
        for (let k = 0; k < take; k++) s.ctrl.push(buf[i + k]);
      }
      s.pos += take;
      s.left -= take;
      i += take;
      if (s.left === 0) endFrame(s);
      continue;
    }
    s.hdr[s.hdrLen++] = buf[i++];
    if (s.hdrLen < 2) continue;
    const len7 = s.hdr[1] & 0x7f;
    const need = len7 === 126 ? 4 : len7 === 127 ? 10 : 2;
    if (s.hdrLen < need) continue;
    const len = len7 === 126 ? s.hdr.readUInt16BE(2) : len7 === 127 ? Number(s.hdr.readBigUInt64BE(2)) : len7;
    s.opcode = s.hdr[0] & 0x0f;
    s.deflated = (s.hdr[0] & 0x40) !== 0;
    s.hdrLen = 0;
    s.pos = 0;
    s.left = len;
    s.ctrl = s.opcode >= 8 ? [] : undefined;
    s.kind = Kind.None;
    s.compressed = s.deflated && s.pendingAcks > 0 ? [] : undefined;
    s.tracked = mode.tracking && s.opcode === 1 && !s.deflated;
    if (s.tracked) s.head ??= Buffer.alloc(HEAD);
    if (len === 0) endFrame(s);
  }
}

/** permessage-deflate strips this tail from each message; inflating needs it back. */
const DEFLATE_TAIL = Buffer.from([0x00, 0x00, 0xff, 0xff]);

function endFrame(s: State): void {
  if (s.compressed) {
    const text = inflateRawSync(Buffer.concat([...s.compressed, DEFLATE_TAIL]), { finishFlush: constants.Z_SYNC_FLUSH });
    s.kind = text.length > CLASSIFY_AT() ? classify(text[CLASSIFY_AT()]) : Kind.Other;
    s.compressed = undefined;
  }
  if (s.kind === Kind.Ack) {
    s.pendingAcks = Math.max(0, s.pendingAcks - 1);
    if (s.pendingAcks === 0 && s.timed) {
      s.timed = false;
      const ms = performance.now() - resumeTimes.t0;
      resumeTimes.acked.push(ms);
      if (ms > SLOW_MS && resumeTimes.slowest.length < 10) resumeTimes.slowest.push([...s.moments, ms].map(Math.round));
    }
  }
  if (s.kind === Kind.Odds) {
    tally.odds++;
    s.odds++;
    if (s.tracked) track(s, Math.min(s.pos, HEAD));
  } else if (s.kind === Kind.Ack) tally.acks++;
  else if (s.opcode === 1 || s.opcode === 2) tally.other++;
  s.kind = Kind.None;
  if (s.opcode === 9) s.sock.write(clientFrame(0xa, Buffer.from(s.ctrl ?? [])));
  else if (s.opcode === 8 && !s.closed) {
    s.closed = true;
    tally.closed++;
  }
  s.ctrl = undefined;
}

export function onRead(s: State, n: number, buf: Buffer, ready: () => void): boolean {
  tally.reads++;
  if (s.handshake !== undefined) {
    s.handshake += buf.toString('latin1', 0, n);
    const end = s.handshake.indexOf('\r\n\r\n');
    if (end < 0) return true;
    const head = s.handshake.slice(0, end);
    const rest = Buffer.from(s.handshake.slice(end + 4), 'latin1');
    s.handshake = undefined;
    if (!/^HTTP\/1\.1 101/.test(head)) {
      s.closed = true;
      s.sock.destroy();
      // A refusal that says when to come back (the admission limits) is retried then, like a real client.
      const after = /\r\nretry-after: *(\d+)/i.exec(head);
      const line = head.split('\r\n')[0];
      if (after && s.retry) {
        tally.refused.set(line, (tally.refused.get(line) ?? 0) + 1);
        s.retry(Number(after[1]) * 1000 + Math.random() * 1000);
      } else process.stderr.write(`raw client: handshake refused: ${head.split('\r\n')[0]}\n`);
      return false;
    }
    if (/\r\nsec-websocket-extensions: *permessage-deflate/i.test(head)) tally.deflating++;
    if (s.timed) s.moments.push(performance.now() - resumeTimes.t0);
    ready();
    tally.bytes += rest.length;
    if (rest.length) frames(s, rest, 0, rest.length);
    return true;
  }
  tally.bytes += n;
  frames(s, buf, 0, n);
  if (cycleMs > 0 && !s.paused) {
    s.paused = true;
    paused.push(s);
    return false;
  }
  return true;
}

export function setCycle(ms: number): void {
  cycleMs = ms;
  clearInterval(cycleTimer);
  if (ms > 0) {
    cycleTimer = setInterval(() => {
      const list = paused;
      paused = [];
      for (const s of list) {
        s.paused = false;
        if (!s.closed) s.sock.resume();
      }
    }, ms);
  } else {
    for (const s of paused.splice(0)) {
      s.paused = false;
      s.sock.resume();
    }
  }
}

/** A socket's reading state before its handshake is answered. */
export function newState(sock: net.Socket, pendingAcks: number, mids: string[], held: Record<string, number> | undefined, retry: State['retry'], timed = false): State {
  return {
    sock, handshake: '', hdr: Buffer.alloc(14), hdrLen: 0, left: 0, pos: 0, opcode: 0, deflated: false,
    pendingAcks, compressed: undefined, kind: Kind.None, odds: 0, mids, last: new Map(Object.entries(held ?? {})), tracked: false, head: undefined,
    ctrl: undefined, paused: false, closed: false, retry, timed, moments: [],
  };
}
