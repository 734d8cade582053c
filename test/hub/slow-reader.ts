/**
 * A subscriber on a slow link, in a process of its own (so its pace is its own, whatever the
 * service's process is doing), for hub/age.test.ts. Not a test file itself. The readers are
 * bench:age's (bench/lib/reader.ts), so the test checks what the benchmark measures.
 *
 *   node slow-reader.js raw|client PORT BYTES_PER_SECOND MID,MID,...
 *
 * `raw`: a WebSocket client over TCP reading BYTES_PER_SECOND and answering pings as it reads
 * them (as RFC 6455 asks), holding a market live unless a `freshness` frame said otherwise.
 * `client`: the TypeScript client, behind a relay that passes the server's bytes on at
 * BYTES_PER_SECOND, holding a market as `client.freshness` says.
 *
 * Over IPC it takes `{ fast: true }` (read at full speed from now on) and `{ report: true }`,
 * answered with what its screen held and when: for each market, each change of the image it
 * showed (seq) or of whether it showed it as live, with the time (this machine's clock, the
 * service's too).
 */
import { pacedClient, rawReader } from '../../bench/lib/reader.js';

export interface Shown {
  at: number;
  seq: number;
  live: boolean;
  /** How old the image was (its pt) when it was shown, for a new image. */
  age?: number;
  why?: string;
}

const [mode, portText, rateText, midsText] = process.argv.slice(2);
const port = Number(portText);
let rate = Number(rateText);
const mids = midsText.split(',');
const screens = new Map<string, Shown[]>(mids.map((m) => [m, []]));
const show = (mid: string, change: Omit<Shown, 'at'>) => screens.get(mid)?.push({ at: Date.now(), ...change });
const last = (mid: string) => screens.get(mid)?.at(-1);

if (mode === 'raw') {
  rawReader({
    port, mids, rate: () => rate,
    read: (msg) => {
      if (!msg.mid || !screens.has(msg.mid)) return;
      const held = last(msg.mid) ?? { seq: 0, live: true };
      if (msg.op === 'odds') show(msg.mid, { seq: msg.seq!, live: held.live, age: Date.now() - msg.pt!, why: 'why' in held ? held.why : undefined });
      else if (msg.op === 'freshness') show(msg.mid, { seq: held.seq, live: msg.live!, why: msg.why });
    },
  });
} else {
  await pacedClient({
    port, mids, rate: () => rate, maxAgeMs: Number(process.env.MAX_AGE_MS ?? 2000),
    odds: (msg, f) => show(msg.mid, { seq: msg.seq, live: f.live, age: Date.now() - msg.pt, why: f.live ? undefined : f.why }),
    freshness: (f) => show(f.mid, { seq: last(f.mid)?.seq ?? 0, live: f.live, why: f.live ? undefined : f.why }),
  });
}

process.on('message', (m: { fast?: boolean; report?: boolean }) => {
  if (m.fast) rate = 0;
  if (m.report) process.send!({ screens: Object.fromEntries(screens) });
});
process.send!({ ready: true });
