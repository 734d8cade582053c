import type { Logger } from '../../log.js';
import { LineBudget } from '../../lib/line-budget.js';
import type { BusMetrics, BusSubjectKind } from '../../metrics/bus.js';
import { decodeServerProto } from '../../odds/codec.js';
import type { OddsImage, OddsMessage } from '../../odds/messages.js';
import { MAX_IDS, isMarketId } from '../../refdata/ids.js';
import type { ClientOp, ImageCheck } from '../types.js';

/** A stored image: its stream sequence, the odds message, its image as ingest's check returned it, and the frame as stored. */
export interface Stored {
  ss: number;
  msg: OddsMessage;
  image: OddsImage;
  frame: Uint8Array;
}

/** A client's market set changed on the pod `from`. */
export interface ClientChange {
  from: string;
  op: ClientOp;
  client: string;
  mids: string[];
}

export type RefuseReason = 'too_large' | 'undecodable' | 'shape' | 'subject' | 'epoch' | 'seq' | 'invalid' | 'forged' | 'overload';

/** Far above the largest image ingest accepts (500 runners, 10 levels a side), far below NATS's own 1 MiB. */
const MAX_IMAGE_BYTES = 512 * 1024;
/** Fifty market IDs of 64 characters and a client name fit many times over. */
const MAX_CLIENT_BYTES = 16 * 1024;
/** The stream's epoch: `s` and its creation time in base 36 (stream.ts). */
const EPOCH = /^s[0-9a-z]{1,24}$/;
/** A pod's ID (randomUUID). */
const POD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Client names as the key CLI makes them (`public` when auth is off). */
const CLIENT_NAME = /^[A-Za-z0-9._-]{1,64}$/;
const CLIENT_KEYS = ['client', 'from', 'mids', 'op'];
const OPS: readonly ClientOp[] = ['attach', 'detach'];
const LOG_LINES = 10;
const LOG_INTERVAL_MS = 10_000;

const utf8 = new TextDecoder('utf-8', { fatal: true });

class Refused {
  constructor(readonly reason: RefuseReason, readonly detail: string) {}
}
const refuse = (reason: RefuseReason, detail: string): Refused => new Refused(reason, detail);

export interface InboundDeps {
  prefix: string;
  /** Ingest's check of an odds image: the bus takes nothing ingest would refuse. */
  check: ImageCheck;
  metrics: BusMetrics;
  log: Logger;
}

/**
 * Everything read from the bus passes here first, whoever sent it: any user
 * with rights on the subjects can publish there, so each message is decoded
 * under a guard and checked as strictly as ingest checks a publisher's. A bad
 * one is counted, logged at a bounded rate, and dropped; nothing here throws,
 * so no message can close the subscription it came on.
 */
export class Inbound {
  private readonly budget = new LineBudget(LOG_LINES, LOG_INTERVAL_MS);

  constructor(private readonly deps: InboundDeps) {}

  /** An image fanned out on `<prefix>.img.<mid>`: its stream sequence (8 bytes, float64) and the stored frame. */
  envelope(subject: string, data: Uint8Array): Stored | undefined {
    if (data.length < 9) return this.refused('image', subject, refuse('shape', `${data.length} bytes is too short for an envelope`));
    const ss = new DataView(data.buffer, data.byteOffset, 8).getFloat64(0);
    return this.image('image', subject, ss, data.subarray(8));
  }

  /** An image on `<prefix>.img.<mid>` (kind image) or read back from `<prefix>.raw.<mid>` (kind stream). */
  image(kind: 'image' | 'stream', subject: string, ss: number, frame: Uint8Array): Stored | undefined {
    const r = this.checkImage(kind, subject, ss, frame);
    return r instanceof Refused ? this.refused(kind, subject, r) : r;
  }

  /** A client change on `<prefix>.ctl.client`. */
  client(data: Uint8Array): ClientChange | undefined {
    const r = checkClient(data);
    return r instanceof Refused ? this.refused('client', `${this.deps.prefix}.ctl.client`, r) : r;
  }

  /** Counts `n` refused messages and logs one line for them, unless the log budget is spent. */
  refuse(kind: BusSubjectKind, subject: string, reason: RefuseReason, detail: string, n = 1): void {
    this.deps.metrics.rejected.inc({ subject_kind: kind, reason }, n);
    const held = this.budget.take();
    if (held === undefined) return;
    this.deps.log.warn('bus message refused', { subject_kind: kind, reason, subject: subject.slice(0, 120), detail: detail.slice(0, 200), count: n, held_back: held });
  }

  private refused(kind: BusSubjectKind, subject: string, r: Refused): undefined {
    this.refuse(kind, subject, r.reason, r.detail);
    return undefined;
  }

  private checkImage(kind: 'image' | 'stream', subject: string, ss: number, frame: Uint8Array): Stored | Refused {
    if (frame.length > MAX_IMAGE_BYTES) return refuse('too_large', `${frame.length} bytes; at most ${MAX_IMAGE_BYTES}`);
    if (!Number.isSafeInteger(ss) || ss < 1) return refuse('seq', `stream sequence ${ss} is not a positive whole number`);
    let decoded;
    try {
      decoded = decodeServerProto(frame);
    } catch (err) {
      return refuse('undecodable', (err as Error).message);
    }
    if (decoded.op !== 'odds') return refuse('shape', `a ${decoded.op} frame, not odds`);
    const msg = decoded;
    const base = `${this.deps.prefix}.${kind === 'image' ? 'img' : 'raw'}.`;
    if (subject !== base + msg.mid) return refuse('subject', `carries market ${msg.mid.slice(0, 64)}`);
    if (!EPOCH.test(msg.epoch)) return refuse('epoch', 'epoch is not a stream epoch');
    // Each write of a market takes one stream sequence, so a market's seq can never pass it.
    if (!Number.isSafeInteger(msg.seq) || msg.seq < 1 || msg.seq > ss) return refuse('seq', `seq ${msg.seq} is not between 1 and its stream sequence ${ss}`);
    if (!Number.isFinite(msg.pt) || msg.pt < 0) return refuse('shape', 'pt must be the publish time in milliseconds');
    if (msg.con || msg.cf) return refuse('shape', 'con and cf are per socket and never stored');
    const checked = this.deps.check(msg as unknown as Record<string, unknown>);
    if ('error' in checked) return refuse('invalid', checked.error);
    return { ss, msg, image: checked.image, frame };
  }
}

function checkClient(data: Uint8Array): ClientChange | Refused {
  if (data.length > MAX_CLIENT_BYTES) return refuse('too_large', `${data.length} bytes; at most ${MAX_CLIENT_BYTES}`);
  let v: unknown;
  try {
    v = JSON.parse(utf8.decode(data));
  } catch (err) {
    return refuse('undecodable', (err as Error).message);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return refuse('shape', 'must be an object {from, op, client, mids}');
  const o = v as Record<string, unknown>;
  if (Object.keys(o).sort().join() !== CLIENT_KEYS.join()) return refuse('shape', 'must have exactly the keys from, op, client, mids');
  if (typeof o.from !== 'string' || !POD_ID.test(o.from)) return refuse('shape', 'from must be a pod ID');
  if (!(OPS as readonly unknown[]).includes(o.op)) return refuse('shape', `op must be one of ${OPS.join(', ')}`);
  if (typeof o.client !== 'string' || !CLIENT_NAME.test(o.client)) return refuse('shape', 'client must be 1 to 64 letters, digits, . _ or -');
  if (!Array.isArray(o.mids) || o.mids.length < 1 || o.mids.length > MAX_IDS) return refuse('shape', `mids must list 1 to ${MAX_IDS} market IDs`);
  if (!o.mids.every(isMarketId)) return refuse('shape', 'mids must be market IDs ([A-Za-z0-9._:-]{1,64})');
  return { from: o.from, op: o.op as ClientOp, client: o.client, mids: o.mids as string[] };
}
