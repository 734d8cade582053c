/** An ISO 8601 date-time with its zone: `2026-11-25T12:01:03.250Z`, `2030-01-01T23:30+05:30`. */
const ISO_TIME = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d)(?:\.(\d+))?)?(?:Z|([+-])(\d\d):(\d\d))$/;

/**
 * The instant an ISO 8601 date-time with its zone names: undefined when `text` is not one, NaN
 * when the calendar has no such day or time. Date.parse takes 30 February as 2 March, so the
 * fields are set on a date of their own, which carries any overflow into the next field, and read
 * back.
 */
export function isoInstant(text: string): number | undefined {
  const m = ISO_TIME.exec(text);
  if (!m) return undefined;
  const [y, mo, d, h, mi] = [1, 2, 3, 4, 5].map((i) => Number(m[i]));
  const s = Number(m[6] ?? 0);
  const [zh, zm] = [Number(m[9] ?? 0), Number(m[10] ?? 0)];
  const at = new Date(0);
  at.setUTCFullYear(y, mo - 1, d);
  at.setUTCHours(h, mi, s, Number((m[7] ?? '').slice(0, 3).padEnd(3, '0')));
  const exists = at.getUTCFullYear() === y && at.getUTCMonth() === mo - 1 && at.getUTCDate() === d &&
    at.getUTCHours() === h && at.getUTCMinutes() === mi && at.getUTCSeconds() === s && zh < 24 && zm < 60;
  return exists ? at.getTime() - (m[8] === '-' ? -1 : 1) * (zh * 60 + zm) * 60_000 : Number.NaN;
}
