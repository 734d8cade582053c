/**
 * The `/ingest` socket of the baseline and the Socket.IO peer, on the `ws` library: the same
 * subprotocol, acks and validation (src/ingest/validate-odds.ts) as the service's, so the publisher feeds
 * every server the same way and only the fan-out differs. Also how the two start and stop.
 */
import type http from 'node:http';
import type pg from 'pg';
import { WebSocketServer, type RawData } from 'ws';
import { validateOdds } from '../../src/ingest/validate-odds.js';
import type { OddsImage } from '../../src/odds/image.js';

/** Market IDs the publisher may send odds for: those in the database when the server starts. */
export async function knownMarkets(pool: pg.Pool): Promise<Set<string>> {
  const { rows } = await pool.query<{ mid: string }>('SELECT mid FROM markets');
  return new Set(rows.map((r) => r.mid));
}

/**
 * Takes `/ingest` upgrades on `server` (others are left to whoever else listens), checks every
 * item of a batch before publishing any, and acks each message.
 */
export function ingestSocket(server: http.Server, known: () => Set<string>, publish: (image: OddsImage) => void): WebSocketServer {
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: 1024 * 1024,
    handleProtocols: (offered) => (offered.has('odds.v1.json') ? 'odds.v1.json' : false),
  });
  server.on('upgrade', (req, socket, head) => {
    if ((req.url ?? '').split('?')[0] !== '/ingest') return;
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  });
  wss.on('connection', (ws) => {
    ws.on('message', (data: RawData) => {
      let body: { id?: unknown; data?: unknown };
      try {
        body = JSON.parse(data.toString());
      } catch {
        return ws.send(JSON.stringify({ op: 'ack', id: 0, status: 0, message: 'malformed JSON' }));
      }
      const id = typeof body.id === 'number' ? body.id : 0;
      const items = Array.isArray(body.data) ? body.data : [];
      const images: OddsImage[] = [];
      for (const [i, item] of items.entries()) {
        const checked = item && typeof item === 'object' && item.kind === 'odds' ? validateOdds(item) : { error: 'only odds items are taken here' };
        if ('error' in checked) return ws.send(JSON.stringify({ op: 'ack', id, status: 0, message: `item ${i}: ${checked.error}` }));
        if (!known().has(checked.image.marketId)) return ws.send(JSON.stringify({ op: 'ack', id, status: 0, message: `item ${i}: market ${checked.image.marketId} is not known` }));
        images.push(checked.image);
      }
      for (const image of images) publish(image);
      ws.send(JSON.stringify({ op: 'ack', id, status: 1, message: `Ingested ${items.length} item${items.length === 1 ? '' : 's'}` }));
    });
    ws.on('error', () => undefined);
  });
  return wss;
}

/**
 * Starts a fan-out peer: its known markets loaded, then listening on HOST:PORT with the line the
 * benchmark waits for (`<name> listening on http://…`). SIGTERM or SIGINT runs `stop` (its
 * sockets), closes the server and ends the pool.
 */
export function serve(name: string, server: http.Server, pool: pg.Pool, loaded: (known: Set<string>) => void, stop: () => void): void {
  const host = process.env.HOST || '127.0.0.1';
  knownMarkets(pool).then((known) => {
    loaded(known);
    server.listen(Number(process.env.PORT || 0), host, () => {
      const { port } = server.address() as { port: number };
      process.stdout.write(`${name} listening on http://${host}:${port}\n`);
    });
  }).catch((err: Error) => {
    process.stderr.write(`${name} failed to start: ${err.message}\n`);
    process.exit(1);
  });
  const end = () => {
    stop();
    server.close();
    void pool.end().finally(() => process.exit(0));
  };
  process.on('SIGTERM', end);
  process.on('SIGINT', end);
}
