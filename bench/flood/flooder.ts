/**
 * A subscriber key flooding `/ws` from its own process (so its CPU is not the
 * service's): SOCKETS sockets, each sending FRAME (a file holding one message)
 * as fast as its socket takes it, reconnecting when closed, until killed.
 * Prints "flooding" once every socket is open. Run by bench/flood.ts.
 */
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';

const { URL: base, KEY: key, SOCKETS, FRAME } = process.env as Record<string, string>;
const frame = readFileSync(FRAME);
let opened = 0;

function flood(): void {
  // An all-zero mask makes ws skip masking: the flooder spends its CPU on sending, not on XOR.
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ws?key=${key}`, { generateMask: (m: Buffer) => void m.fill(0) });
  ws.on('error', () => undefined);
  ws.on('close', () => setTimeout(flood, 10));
  ws.on('open', () => {
    if (++opened === Number(SOCKETS)) process.stdout.write('flooding\n');
    const pump = (): void => {
      if (ws.readyState !== WebSocket.OPEN) return;
      while (ws.bufferedAmount < 1 << 20) ws.send(frame);
      setImmediate(pump);
    };
    pump();
  });
}

for (let i = 0; i < Number(SOCKETS); i++) flood();
