import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { postJson, startTestService } from '../helpers/service.js';
import { image } from '../helpers/ws.js';
import { eventually } from '../helpers/wait.js';
import { decodeServerJson, decodeServerProto } from '../../src/odds/codec.js';
import { encodeClientProto } from '../../src/odds/client-codec.js';
import type { OddsMessage, ServerMessage } from '../../src/odds/messages.js';

/** With WS_COMPRESSION=on, a client that offers permessage-deflate gets deflated frames that say exactly what plain ones say. */
const M = '1.200001001';
const svc = await startTestService(t, { WS_COMPRESSION: 'on' });

async function subscriber(t: Test, format: 'json' | 'proto', deflate: boolean): Promise<{ ws: WebSocket; got: ServerMessage[] }> {
  const ws = new WebSocket(svc.url.replace(/^http/, 'ws') + '/ws', [`odds.v1.${format}`], { perMessageDeflate: deflate });
  const got: ServerMessage[] = [];
  ws.on('message', (d: Buffer, binary: boolean) => got.push(binary ? decodeServerProto(new Uint8Array(d)) : decodeServerJson(d.toString('utf8'))));
  await new Promise((ok, fail) => ws.once('open', ok).once('error', fail));
  t.teardown(() => ws.close());
  const sub = { op: 'subscribe' as const, id: 1, mids: [M] };
  ws.send(format === 'json' ? JSON.stringify(sub) : encodeClientProto(sub));
  await eventually(async () => got.some((f) => f.op === 'ack'), Boolean);
  return { ws, got };
}

for (const format of ['json', 'proto'] as const) {
  t.test(`${format}: deflated and plain frames decode to the same messages`, async (t) => {
    const deflated = await subscriber(t, format, true);
    const plain = await subscriber(t, format, false);
    t.match(deflated.ws.extensions, /permessage-deflate/, 'the extension was negotiated');
    t.equal(plain.ws.extensions, '', 'not for the client that did not offer it');
    const base = format === 'json' ? 3 : 4;
    const prices = Array.from({ length: 20 }, (_, i) => Math.round((base + i / 100) * 100) / 100);
    for (const p of prices) await postJson(svc.url, '/api/v1/ingest', { data: [image(M, p, [1, 2, 3])] });
    const last = (c: { got: ServerMessage[] }) => c.got.filter((f): f is OddsMessage => f.op === 'odds' && prices.includes(f.r[0].b[0][0]));
    for (const c of [deflated, plain]) await eventually(async () => last(c).length, (n) => n === prices.length);
    t.equal(last(deflated).length, prices.length, 'every update arrived deflated');
    t.same(last(deflated), last(plain), 'the same updates, field for field');
  });
}
