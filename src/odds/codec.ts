/**
 * Server-to-client frames in both formats. The server encodes each update
 * once per format and publishes the same bytes to every subscriber, so
 * encoding goes straight to the static protobuf code (no reflection) and to
 * one JSON.stringify of a freshly ordered object.
 */
import { odds as pb } from './gen/odds.js';
import {
  FEED_STATUSES, MARKET_STATUSES, type AckMessage, type DeltaMessage, type ItemRefusal, type MarketStateMessage, type OddsMessage, type ResultMessage, type RunnerDelta,
  type ServerMessage,
} from './messages.js';
import {
  WHY_WIRE, enumName, enumValue, int, runnerDeltasFromProto, runnerDeltasToProto, runnersFromProto, runnersToProto, settled, settlementFromProto, settlementToProto,
  reasoned, termsFromProto, termsJson, termsToProto, traded,
} from './wire.js';

const v1 = pb.v1;

/** An ack's keys in protocol order: `current` and `refused` only when present. */
function ackJson(msg: AckMessage): AckMessage {
  const out: AckMessage = { op: 'ack', id: msg.id, status: msg.status, message: msg.message };
  if (msg.current !== undefined) out.current = msg.current;
  if (msg.refused?.length) out.refused = msg.refused.map((r) => ({ i: r.i, mid: r.mid, message: r.message }));
  if (msg.code !== undefined) out.code = msg.code;
  return out;
}

/** A runner's changes in protocol order: `st`, `b`, `l`, `ltp`, `tv`, each only when it changed. */
function runnerDeltaJson(x: RunnerDelta): RunnerDelta {
  const out: RunnerDelta = { rid: x.rid };
  if (x.st !== undefined) out.st = x.st;
  if (x.b) out.b = x.b;
  if (x.l) out.l = x.l;
  return traded(out, x);
}

/** The JSON text frame, keys in protocol order whatever order the caller built them in. */
export function encodeJson(msg: ServerMessage): string {
  switch (msg.op) {
    case 'odds':
      // `tv` after `r`, and `ltp`, `tv` after `l`; each only when known.
      return JSON.stringify(traded({
        ...reasoned({ op: 'odds', mid: msg.mid, epoch: msg.epoch, seq: msg.seq, ts: msg.ts, pt: msg.pt, st: msg.st }, msg), ip: msg.ip,
        con: msg.con === true, cf: msg.cf === true, r: msg.r.map((x) => traded({ rid: x.rid, st: x.st, b: x.b, l: x.l }, x)),
      }, { tv: msg.tv }));
    case 'delta':
      return JSON.stringify(traded({
        ...reasoned({ op: 'delta', mid: msg.mid, epoch: msg.epoch, seq: msg.seq, from: msg.from, ts: msg.ts, pt: msg.pt, st: msg.st }, msg), ip: msg.ip,
        r: msg.r.map(runnerDeltaJson),
      }, { tv: msg.tv }));
    case 'ack': return JSON.stringify(ackJson(msg));
    case 'market':
      return JSON.stringify(msg.terms ? { op: 'market', mid: msg.mid, s: msg.s, go: msg.go, rt: msg.rt, terms: termsJson(msg.terms) } : { op: 'market', mid: msg.mid, s: msg.s, go: msg.go, rt: msg.rt });
    case 'result':
      return JSON.stringify(settled({ op: 'result', mid: msg.mid, mt: msg.mt, res: msg.res, rt: msg.rt, ia: msg.ia }, msg));
    case 'unsubscribed': return JSON.stringify({ op: 'unsubscribed', mids: msg.mids });
    case 'hb': return JSON.stringify({ op: 'hb', ts: msg.ts });
    case 'clock': return JSON.stringify({ op: 'clock', ts: msg.ts });
    case 'feed': return JSON.stringify({ op: 'feed', status: msg.status });
    case 'freshness':
      return JSON.stringify(msg.live ? { op: 'freshness', mid: msg.mid, live: true, at: msg.at } : { op: 'freshness', mid: msg.mid, live: false, why: msg.why, at: msg.at });
    case 'notice': return JSON.stringify({ op: 'notice', status: msg.status, message: msg.message });
  }
}

export function encodeProto(msg: ServerMessage): Uint8Array {
  let m: pb.v1.ServerMessage.$Properties;
  switch (msg.op) {
    case 'odds':
      m = { odds: reasoned(traded({
        mid: msg.mid, epoch: msg.epoch, seq: msg.seq, ts: msg.ts, pt: msg.pt, st: enumValue(MARKET_STATUSES, msg.st, 'st'),
        ip: msg.ip, con: msg.con, cf: msg.cf, r: runnersToProto(msg.r),
      }, { tv: msg.tv }), msg) };
      break;
    case 'delta':
      m = { delta: reasoned(traded({
        mid: msg.mid, epoch: msg.epoch, seq: msg.seq, from: msg.from, ts: msg.ts, pt: msg.pt,
        st: enumValue(MARKET_STATUSES, msg.st, 'st'), ip: msg.ip, r: runnerDeltasToProto(msg.r),
      }, { tv: msg.tv }), msg) };
      break;
    // The proto encoders read only their own fields, so `op` needs no stripping.
    case 'ack': m = { ack: msg }; break;
    case 'market': m = { market: { mid: msg.mid, s: msg.s, go: msg.go, rt: msg.rt, terms: msg.terms && termsToProto(msg.terms) } }; break;
    case 'result': m = { result: { ...msg, rs: settlementToProto(msg.rs) } }; break;
    case 'unsubscribed': m = { unsubscribed: msg }; break;
    case 'hb': m = { hb: msg }; break;
    case 'clock': m = { clock: { ts: msg.ts } }; break;
    case 'feed': m = { feed: { status: enumValue(FEED_STATUSES, msg.status, 'feed status') } }; break;
    case 'freshness':
      m = { freshness: { mid: msg.mid, live: msg.live, why: msg.live ? 0 : enumValue(WHY_WIRE, msg.why, 'freshness why'), at: msg.at } };
      break;
    case 'notice': m = { notice: msg }; break;
  }
  return v1.ServerMessage.encode(m).finish();
}

/** A frame in a socket's format. */
export function encodeFor(format: 'json' | 'proto', msg: ServerMessage): string | Uint8Array {
  return format === 'json' ? encodeJson(msg) : encodeProto(msg);
}

/** A binary frame that decodes but carries no message this version knows (a newer server's). */
export class UnknownServerMessage extends Error {
  constructor() {
    super('server message carries no known message');
    this.name = 'UnknownServerMessage';
  }
}

/** Reads a binary frame back into the JSON shape. Throws on malformed input, UnknownServerMessage on a message of no known kind. */
export function decodeServerProto(bytes: Uint8Array): ServerMessage {
  const m = v1.ServerMessage.decode(bytes);
  switch (m.msg) {
    case 'ack': {
      const a = m.ack as pb.v1.Ack;
      const ack: AckMessage = { op: 'ack', id: a.id, status: a.status === 1 ? 1 : 0, message: a.message };
      if (a.current != null) ack.current = a.current;
      if (a.refused.length) ack.refused = (a.refused as ItemRefusal[]).map((r) => ({ i: r.i, mid: r.mid, message: r.message }));
      if (a.code != null) ack.code = a.code;
      return ack;
    }
    case 'odds': {
      const o = m.odds as pb.v1.Odds;
      return traded<OddsMessage>({
        ...reasoned({ op: 'odds' as const, mid: o.mid, epoch: o.epoch, seq: int(o.seq, 'seq'), ts: o.ts, pt: o.pt, st: enumName(MARKET_STATUSES, o.st, 'st') }, o),
        ip: o.ip, con: o.con, cf: o.cf, r: runnersFromProto(o.r as pb.v1.RunnerOdds[]),
      }, { tv: o.tv });
    }
    case 'delta': {
      const d = m.delta as pb.v1.Delta;
      return traded<DeltaMessage>({
        ...reasoned({ op: 'delta' as const, mid: d.mid, epoch: d.epoch, seq: int(d.seq, 'seq'), from: int(d.from, 'from'), ts: d.ts, pt: d.pt, st: enumName(MARKET_STATUSES, d.st, 'st') }, d),
        ip: d.ip, r: runnerDeltasFromProto(d.r as pb.v1.RunnerDelta[]),
      }, { tv: d.tv });
    }
    case 'market': {
      const s = m.market as pb.v1.MarketState;
      const state: MarketStateMessage = { op: 'market', mid: s.mid, s: s.s, go: s.go, rt: s.rt };
      if (s.terms) state.terms = termsFromProto(s.terms as pb.v1.MarketTerms);
      return state;
    }
    case 'result': {
      const r = m.result as pb.v1.Result;
      return settled<ResultMessage>({ op: 'result', mid: r.mid, mt: r.mt, res: r.res, rt: r.rt, ia: r.ia }, { cert: r.cert, at: r.at, rs: settlementFromProto(r.rs as pb.v1.RunnerSettlement[]) });
    }
    case 'unsubscribed': return { op: 'unsubscribed', mids: (m.unsubscribed as pb.v1.Unsubscribed).mids };
    case 'hb': return { op: 'hb', ts: (m.hb as pb.v1.Heartbeat).ts };
    case 'clock': return { op: 'clock', ts: (m.clock as pb.v1.Heartbeat).ts };
    case 'feed':
      return { op: 'feed', status: enumName(FEED_STATUSES, (m.feed as pb.v1.Feed).status, 'feed status') };
    case 'freshness': {
      const f = m.freshness as pb.v1.Freshness;
      const why = enumName(WHY_WIRE, f.why, 'freshness why');
      if (f.live !== (why === 'NONE')) throw new Error('a freshness frame is live exactly when it gives no reason');
      return why === 'NONE' ? { op: 'freshness', mid: f.mid, live: true, at: f.at } : { op: 'freshness', mid: f.mid, live: false, why, at: f.at };
    }
    case 'notice': return { op: 'notice', status: 0, message: (m.notice as pb.v1.Notice).message };
    default: throw new UnknownServerMessage();
  }
}

const SERVER_OPS = ['ack', 'odds', 'delta', 'market', 'result', 'unsubscribed', 'hb', 'clock', 'feed', 'freshness', 'notice'];

/** Reads a text frame. Throws on malformed input. */
export function decodeServerJson(text: string): ServerMessage {
  const m: unknown = JSON.parse(text);
  if (typeof m !== 'object' || m === null || !SERVER_OPS.includes((m as { op?: unknown }).op as string)) {
    throw new Error('not a server message');
  }
  return m as ServerMessage;
}
