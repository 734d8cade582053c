/**
 * Every error a caller can see, in one place. HTTP answers carry the status
 * code and `{"status":0,"message":...}`; socket acks carry the same message.
 */
export class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly headers: Readonly<Record<string, string>> = {}) {
    super(message);
  }

  get body(): string {
    return JSON.stringify({ status: 0, message: this.message });
  }
}

export const STATUS_LINES: Readonly<Record<number, string>> = {
  200: '200 OK',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

export const errors = {
  badParam: (name: string, rule: string) => new HttpError(400, `${name} ${rule}`),
  badBody: (rule: string) => new HttpError(400, `request body ${rule}`),
  badItem: (item: string, why: string) => new HttpError(400, `${item}: ${why}`),
  unauthorized: (why: string) => new HttpError(401, why),
  forbidden: (why: string) => new HttpError(403, why),
  rateLimited: (perSecond: number, retryAfterS: number) =>
    new HttpError(429, `rate limit: at most ${perSecond} requests per second per API key; retry after ${retryAfterS} s`, { 'retry-after': String(retryAfterS) }),
  tooManySockets: (why: string) => new HttpError(429, why),
  notFound: (path: string) => new HttpError(404, `no route for ${path}`),
  methodNotAllowed: (method: string, path: string, allowed: string) =>
    new HttpError(405, `${method} is not allowed on ${path}; use ${allowed}`, { allow: allowed }),
  notWebSocket: (path: string) => new HttpError(400, `${path} takes WebSocket connections only: send a GET with Upgrade: websocket`),
  tooLarge: (limit: number) => new HttpError(413, `request body is larger than ${limit} bytes`),
  unsupportedType: (allowed: string) => new HttpError(415, `content-type must be ${allowed}`),
  databaseDown: () => new HttpError(503, 'the database is unavailable; nothing was changed, try again'),
  notReady: (why: string) => new HttpError(503, why),
  internal: () => new HttpError(500, 'internal error; nothing was changed'),
} as const;
