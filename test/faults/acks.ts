/**
 * What the publishers of the memory tests (pipeliner.ts, ingest-attacker.ts) share: the odds image
 * they send, and how they count the acks. Not a test file.
 */

/** An odds image of `mid` with `runners` runners, three levels a side, its best back moving with `i`. */
export const oddsImage = (mid: string, runners: number, i: number) => ({
  kind: 'odds', mid, ts: Date.now(), st: 'OPEN', ip: true,
  r: Array.from({ length: runners }, (_, k) => ({ rid: k + 1, st: 'ACTIVE', b: [[2 + (i % 50) / 100, 10], [1.99, 20], [1.98, 30]], l: [[2.5, 11], [2.52, 21], [2.54, 31]] })),
});

export interface AckCounts {
  acked: number;
  /** Refusals by message, their numbers written N. */
  refused: Record<string, number>;
}

/** Counts one ack frame. */
export function countAck(counts: AckCounts, frame: Buffer): void {
  const ack = JSON.parse(frame.toString()) as { status: number; message: string };
  if (ack.status === 1) counts.acked++;
  else {
    const why = ack.message.replace(/\d+/g, 'N');
    counts.refused[why] = (counts.refused[why] ?? 0) + 1;
  }
}
