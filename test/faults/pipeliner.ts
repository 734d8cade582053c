/**
 * A publisher pipelining from its own process (so its memory is not the
 * service's): one `/ingest` connection sends BATCHES batches of just under
 * 1 MiB each (a league, then images of MID's RUNNERS runners) without waiting for an ack, then prints one JSON line counting
 * the acks (status 1) and the refusals (status 0, by message) once every
 * batch is answered. Not a test file itself.
 */
import WebSocket from 'ws';
import { countAck, oddsImage } from './acks.js';

const { URL: base, BATCHES, MID, RUNNERS } = process.env as Record<string, string>;
const item = (i: number) => oddsImage(MID, Number(RUNNERS), i);
// A reference item first: its write waits on Postgres, as a real publisher's batches do, while more arrive.
const data: Record<string, unknown>[] = [{ kind: 'league', li: 990002, si: 1, na: 'Pipelined League' }];
for (let i = 0; JSON.stringify({ id: 0, data }).length < 1024 * 1024 - 32 * 1024; i++) data.push(item(i));
const n = Number(BATCHES);
const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ingest`, ['odds.v1.json'], { generateMask: (m: Buffer) => void m.fill(0) });
const counts = { acked: 0, refused: {} as Record<string, number>, bytes: 0 };
let answered = 0;
const started = Date.now();
// Serialised once: the batches differ only in their id.
const json = JSON.stringify(data);
ws.on('open', () => {
  for (let id = 1; id <= n; id++) {
    const body = `{"id":${id},"data":${json}}`;
    counts.bytes = body.length;
    ws.send(body);
  }
});
ws.on('message', (frame: Buffer) => {
  countAck(counts, frame);
  if (++answered === n) {
    process.stdout.write(JSON.stringify({ ...counts, ms: Date.now() - started }) + '\n');
    ws.close();
  }
});
