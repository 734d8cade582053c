import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import type { SocketConstructor } from '../client/index.js';

import { HANDSHAKE_TIMEOUT_MS } from '../exchange/publisher.js';

/** Enough of a refusal's body for its message; the rest is not read. */
const MAX_REASON_BYTES = 4096;

/** The service's error body `{"status":0,"message":...}`, or whatever text the server sent. */
function reasonOf(status: number, body: string): string {
  let said = body.trim();
  try {
    const parsed = JSON.parse(said) as { message?: unknown };
    if (typeof parsed?.message === 'string') said = parsed.message;
  } catch {
    // not the service's JSON: the text as it came
  }
  return `refused with ${status}${said ? `: ${said.slice(0, 300)}` : ''}`;
}

/**
 * The `ws` package's socket for the tools: sends the API key in the
 * `x-api-key` header (kept out of URLs, which end up in logs), and when the
 * server refuses the handshake, reports its status and its own reason as the
 * socket's error rather than only "Unexpected server response: 401".
 */
export function toolSocket(key: string | undefined): SocketConstructor {
  return class ToolSocket extends WebSocket {
    constructor(url: string, protocols: string[], options?: { maxPayload?: number }) {
      super(url, protocols, { ...options, handshakeTimeout: HANDSHAKE_TIMEOUT_MS, ...(key ? { headers: { 'x-api-key': key } } : {}) });
      this.on('unexpected-response', (_req, res: IncomingMessage) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (body.length < MAX_REASON_BYTES) body += chunk;
        });
        res.once('close', () => {
          this.emit('error', new Error(reasonOf(res.statusCode ?? 0, body)));
          this.terminate();
        });
      });
    }
  };
}
