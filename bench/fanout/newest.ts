import type { Child } from './child.js';

/** What a newest check found: (socket, market) pairs checked, those whose last frame was not the newest, and sockets closed. */
export interface Newest {
  checked: number;
  stale: number;
  closedSockets: number;
  /** One stale pair, for the report. */
  example?: string;
}

/** A receiving socket as the check sees it: its markets, and the `seq` of the last odds frame of each. */
export interface Held {
  closed: boolean;
  mids: Iterable<string>;
  last: ReadonlyMap<string, number>;
}

/** Which (socket, market) pairs did not end with the newest image: the last odds frame of each must carry `expected[mid]`. */
export function newest(sockets: Iterable<Held>, expected: Record<string, number>, what = 'socket'): Newest {
  const out: Newest = { checked: 0, stale: 0, closedSockets: 0 };
  let i = 0;
  for (const s of sockets) {
    const at = i++;
    if (s.closed) {
      out.closedSockets++;
      continue;
    }
    for (const mid of s.mids) {
      out.checked++;
      const got = s.last.get(mid);
      if (got === expected[mid]) continue;
      out.stale++;
      out.example ??= `${what} ${at}, market ${mid}: last seq ${got ?? 'none'}, newest ${expected[mid]}`;
    }
  }
  return out;
}

/** The newest check across client processes, each asked for its sockets, the findings summed. */
export async function askNewest(children: readonly Child[], expected: Record<string, number>): Promise<Newest> {
  const all = await Promise.all(children.map((c) => c.ask<Newest>({ type: 'newest', expected }, 'newest')));
  return {
    checked: all.reduce((a, n) => a + n.checked, 0), stale: all.reduce((a, n) => a + n.stale, 0),
    closedSockets: all.reduce((a, n) => a + n.closedSockets, 0), example: all.find((n) => n.example)?.example,
  };
}
