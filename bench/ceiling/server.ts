/**
 * The ceiling: the least a uWebSockets.js server can do per request here. It answers every GET
 * with a static body looked up by URL (the bodies the service returned for the same URLs, so
 * the same sizes), with the same status line and content-type the service writes. No parsing,
 * no model, no error handling: what is left is the library and the kernel.
 *
 * Env: BODIES_FILE (JSON object, URL with query -> body; a bare path is the fallback for its
 * other URLs), PORT (0 = free port), HOST.
 */
import { readFileSync } from 'node:fs';
import uws from 'uWebSockets.js';

const file = process.env.BODIES_FILE;
if (!file) {
  process.stderr.write('BODIES_FILE is required\n');
  process.exit(2);
}
const bodies = new Map<string, Buffer>(Object.entries(JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>).map(([k, v]) => [k, Buffer.from(v)]));
const missing = Buffer.from('{"status":0,"message":"no body for this URL"}');

const app = uws.App();
app.get('/*', (res, req) => {
  const q = req.getQuery();
  // A URL without a body of its own (the cache-miss variants) gets its path's representative body.
  const body = bodies.get(q ? `${req.getUrl()}?${q}` : req.getUrl()) ?? bodies.get(req.getUrl());
  res.cork(() => {
    res.writeStatus(body ? '200 OK' : '404 Not Found').writeHeader('content-type', 'application/json').end(body ?? missing);
  });
});

const host = process.env.HOST || '127.0.0.1';
app.listen(host, Number(process.env.PORT || 0), (socket) => {
  if (!socket) {
    process.stderr.write('ceiling: cannot listen\n');
    process.exit(1);
  }
  process.stdout.write(`ceiling listening on http://${host}:${uws.us_socket_local_port(socket)}\n`);
});

process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
