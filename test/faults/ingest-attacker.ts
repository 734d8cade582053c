/**
 * The memory attack on ingest queues, from a process of its own (so its memory is not the
 * service's): for each API key in KEYS, CONNS `/ingest` connections, each sending one batch of
 * MARKETS markets (its write is slow: every connection writes the same rows, one after the other)
 * and then ODDS batches of just under 1 MiB of odds images, without waiting for acks. Prints one
 * JSON line counting acks and refusals (by message) once every batch is answered. Not a test file.
 */
import WebSocket from 'ws';
import { countAck, oddsImage } from './acks.js';

const { URL: base, KEYS, CONNS, ODDS, MARKETS } = process.env as Record<string, string>;
const markets = Array.from({ length: Number(MARKETS) }, (_, i) => ({
  kind: 'market', mid: `9.${i}`, eid: 30000001, na: `M${i}`, ty: 'match-odd', s: true, go: false, rt: false, r: [{ rid: 1, na: 'A' }, { rid: 2, na: 'B' }],
}));
const odds: Record<string, unknown>[] = [];
for (let i = 0; JSON.stringify({ id: 0, data: odds }).length < 1024 * 1024 - 32 * 1024; i++) odds.push(oddsImage('1.200001007', 150, i));
const reference = JSON.stringify({ id: 1, data: markets });
// Serialised once: the odds batches differ only in their id.
const oddsJson = JSON.stringify(odds);
const perConnection = 1 + Number(ODDS);
const counts = { acked: 0, refused: {} as Record<string, number>, closed: 0, referenceBytes: reference.length };
let answered = 0;
const sockets: WebSocket[] = [];
const expected = KEYS.split(',').length * Number(CONNS) * perConnection;
const done = () => {
  if (answered < expected) return;
  process.stdout.write(JSON.stringify(counts) + '\n');
  for (const ws of sockets) ws.close();
};
for (const key of KEYS.split(',')) {
  for (let c = 0; c < Number(CONNS); c++) {
    const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ingest`, ['odds.v1.json'], { headers: { 'x-api-key': key }, generateMask: (m: Buffer) => void m.fill(0) });
    sockets.push(ws);
    let mine = 0;
    ws.on('open', () => {
      ws.send(reference);
      for (let id = 2; id <= perConnection; id++) ws.send(`{"id":${id},"data":${oddsJson}}`);
    });
    ws.on('message', (frame: Buffer) => {
      countAck(counts, frame);
      mine++;
      answered++;
      done();
    });
    ws.on('close', () => {
      if (answered >= expected) return;
      counts.closed++;
      answered += perConnection - mine;
      done();
    });
  }
}
