import type { Book } from '../odds/book.js';
import type { OddsMetrics } from '../metrics/odds.js';
import type { Broadcaster } from './broadcaster.js';
import { topicOf, type Session } from './session.js';
import type { MarketStates } from './states.js';

/**
 * A socket over its soft backpressure limit is taken off its topics, so its
 * frames are skipped and nobody else waits. What it had been sent is noted:
 * uWS never drops frames itself (its limit is off), so everything up to here
 * was queued for it.
 */
export function fallBehind(s: Session, book: Book, states: MarketStates, now: number): void {
  const seqs = new Map<string, { epoch: string; seq: number }>();
  for (const [mid, v] of s.subs) {
    s.conn.unsubscribe(topicOf(v, mid));
    const e = book.get(mid);
    if (e) seqs.set(mid, { epoch: e.epoch, seq: e.seq });
  }
  s.lag = { since: now, seqs, stateRev: states.revision, lost: new Set() };
}

/**
 * Back on its topics once drained, with everything that changed while it was
 * behind: the newest image of each market that moved (`con: true`), the
 * `market` and `result` frames that changed, and one `unsubscribed` for the
 * markets it lost meanwhile, after their final state. Its book then equals
 * the server's.
 */
export function catchUp(s: Session, bc: Broadcaster, book: Book, states: MarketStates, metrics: OddsMetrics): void {
  const lag = s.lag;
  if (!lag) return;
  bc.flush();
  s.lag = undefined;
  metrics.resyncs.inc();
  s.conn.cork(() => {
    for (const [mid, v] of s.subs) {
      s.conn.subscribe(topicOf(v, mid));
      const e = book.get(mid);
      const had = lag.seqs.get(mid);
      if (e && (!had || had.epoch !== e.epoch || had.seq !== e.seq)) {
        if (had) metrics.framesSkipped.inc(had.epoch === e.epoch ? e.seq - had.seq : 1);
        bc.sendFrame(s, e.frame(s.format, 'con', v.depth));
      }
      bc.joined(mid, v, e);
      for (const msg of states.since(mid, lag.stateRev)) bc.send(s, msg);
    }
    if (!lag.lost.size) return;
    for (const mid of lag.lost) for (const msg of states.since(mid, lag.stateRev)) bc.send(s, msg);
    bc.send(s, { op: 'unsubscribed', mids: [...lag.lost] });
  });
}
