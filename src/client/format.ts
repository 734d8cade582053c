/** Traded volumes, compactly (950, 12.3K, 4.5M), so a column of them stays narrow. */
const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });

export const formatVolume = (n: number): string => compact.format(n);

/** Past a day an age says since when, not how long: `18263643 s` tells a reader nothing. */
export const AGE_SINCE_MS = 24 * 60 * 60 * 1000;

const pad = (n: number): string => String(n).padStart(2, '0');

/**
 * How old something is, for a screen: `850 ms`, then `12 s`, `5 min`, `3 h`; past a day, when its
 * data came, `no data since 2026-05-01 14:02 UTC` (UTC: a terminal and a browser anywhere read it
 * alike). `now` is the moment it is told at.
 */
export function formatAge(ms: number, now = Date.now()): string {
  const age = Math.max(0, ms);
  if (age < 10_000) return `${Math.round(age)} ms`;
  if (age < 120_000) return `${Math.round(age / 1000)} s`;
  if (age < 7_200_000) return `${Math.round(age / 60_000)} min`;
  if (age < AGE_SINCE_MS) return `${Math.round(age / 3_600_000)} h`;
  const d = new Date(now - age);
  return `no data since ${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())} UTC`;
}
