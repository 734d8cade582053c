import type { Logger } from '../../log.js';
import { LineBudget } from '../../lib/line-budget.js';
import type { BusMetrics, BusSubjectKind } from '../../metrics/bus.js';
import { decodeServerProto } from '../../odds/codec.js';
import type { OddsImage } from '../../odds/image.js';
import type { OddsMessage } from '../../odds/messages.js';
import { MAX_IDS, isMarketId } from '../../refdata/ids.js';
import type { StoredSetOp, ImageCheck, SourceFreshness, SourceReason } from '../types.js';

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
  op: StoredSetOp;
  client: string;
  mids: string[];
}

/** Markets' freshness from the pod `from`, whose publishers feed them. */
export interface FreshnessReport {
  from: string;
  states: SourceFreshness[];
}

export type RefuseReason = 'too_large' | 'undecodable' | 'shape' | 'subject' | 'epoch' | 'seq' | 'invalid' | 'forged' | 'overload';

/** Market states in one freshness message: a pod sends more in several. */
export const MAX_FRESHNESS_STATES = 500;

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
const CLIENT_KEYS = ['from', 'op', 'client', 'mids'];
/** 500 states of a 64-character market ID, a reason and a time fit with room to spare. */
const MAX_FRESHNESS_BYTES = 64 * 1024;
const MAX_POD_BYTES = 128;
const SOURCE_REASONS: readonly (SourceReason | null)[] = [null, 'publisher', 'unreliable', 'late'];
const OPS: readonly StoredSetOp[] = ['attach', 'detach'];
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

  /** Markets' freshness on `<prefix>.ctl.freshness`. */
  freshness(data: Uint8Array): FreshnessReport | undefined {
    const r = checkFreshness(data);
    return r instanceof Refused ? this.refused('freshness', `${this.deps.prefix}.ctl.freshness`, r) : r;
  }

  /** A pod's announcement on `<prefix>.ctl.pod`: its ID. */
  pod(data: Uint8Array): string | undefined {
    const r = checkPod(data);
    return r instanceof Refused ? this.refused('pod', `${this.deps.prefix}.ctl.pod`, r) : r;
  }

  /** Counts `n` refused messages and logs one line for them, unless the log budget is spent. */
  refuse(kind: BusSubjectKind, subject: string, reason: RefuseReason, detail: string, n = 1): void {
    this.deps.metrics.rejected.inc({ subject_kind: kind, reason }, n);
    const held = this.budget.spend();
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

/** A JSON control message: at most `max` bytes of UTF-8, an object with exactly `keys`, `from` a pod ID. */
function controlObject(data: Uint8Array, max: number, keys: readonly string[]): Record<string, unknown> | Refused {
  if (data.length > max) return refuse('too_large', `${data.length} bytes; at most ${max}`);
  let v: unknown;
  try {
    v = JSON.parse(utf8.decode(data));
  } catch (err) {
    return refuse('undecodable', (err as Error).message);
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return refuse('shape', `must be an object {${keys.join(', ')}}`);
  const o = v as Record<string, unknown>;
  if (Object.keys(o).sort().join() !== [...keys].sort().join()) return refuse('shape', `must have exactly the keys ${keys.join(', ')}`);
  if (typeof o.from !== 'string' || !POD_ID.test(o.from)) return refuse('shape', 'from must be a pod ID');
  return o;
}

function checkPod(data: Uint8Array): string | Refused {
  const o = controlObject(data, MAX_POD_BYTES, ['from']);
  return o instanceof Refused ? o : (o.from as string);
}

/** `{from, states: [[mid, why or null, at], ...]}`. */
function checkFreshness(data: Uint8Array): FreshnessReport | Refused {
  const o = controlObject(data, MAX_FRESHNESS_BYTES, ['from', 'states']);
  if (o instanceof Refused) return o;
  if (!Array.isArray(o.states) || o.states.length < 1 || o.states.length > MAX_FRESHNESS_STATES) return refuse('shape', `states must list 1 to ${MAX_FRESHNESS_STATES} markets`);
  const states: SourceFreshness[] = [];
  for (const s of o.states as unknown[]) {
    if (!Array.isArray(s) || s.length !== 3) return refuse('shape', 'each state must be [mid, why, at]');
    const [mid, why, at] = s as unknown[];
    if (!isMarketId(mid)) return refuse('shape', 'a state\'s mid must be a market ID ([A-Za-z0-9._:-]{1,64})');
    if (!SOURCE_REASONS.includes(why as SourceReason | null)) return refuse('shape', 'a state\'s why must be null, publisher, unreliable or late');
    if (typeof at !== 'number' || !Number.isFinite(at) || at < 0) return refuse('shape', 'a state\'s at must be a time in milliseconds');
    states.push({ mid, why: (why as SourceReason | null) ?? undefined, at });
  }
  return { from: o.from as string, states };
}

function checkClient(data: Uint8Array): ClientChange | Refused {
  const o = controlObject(data, MAX_CLIENT_BYTES, CLIENT_KEYS);
  if (o instanceof Refused) return o;
  if (!(OPS as readonly unknown[]).includes(o.op)) return refuse('shape', `op must be one of ${OPS.join(', ')}`);
  if (typeof o.client !== 'string' || !CLIENT_NAME.test(o.client)) return refuse('shape', 'client must be 1 to 64 letters, digits, . _ or -');
  if (!Array.isArray(o.mids) || o.mids.length < 1 || o.mids.length > MAX_IDS) return refuse('shape', `mids must list 1 to ${MAX_IDS} market IDs`);
  if (!o.mids.every(isMarketId)) return refuse('shape', 'mids must be market IDs ([A-Za-z0-9._:-]{1,64})');
  return { from: o.from as string, op: o.op as StoredSetOp, client: o.client, mids: o.mids as string[] };
}
