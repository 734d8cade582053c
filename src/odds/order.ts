/**
 * Which of two frames of a market is newer: the rule for pods and clients alike, so it stays
 * browser-safe (the client package bundles it).
 */

/** A different epoch replaces what is held; within one, the higher seq wins. */
export const isNewer = (held: { epoch: string; seq: number } | undefined, epoch: string, seq: number): boolean =>
  !held || held.epoch !== epoch || seq > held.seq;
