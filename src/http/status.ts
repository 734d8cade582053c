import type { ErrorCode, ServiceError } from '../errors.js';

/** The HTTP edge of the error catalogue: each code's status, decided here and nowhere else. */
const STATUS: Readonly<Record<ErrorCode, number>> = {
  BAD_PARAM: 400,
  BAD_BODY: 400,
  ITEM_REJECTED: 400,
  LIMIT: 400,
  NOT_WEBSOCKET: 400,
  ABORTED: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  MISDIRECTED: 421,
  TOO_LARGE: 413,
  UNSUPPORTED_TYPE: 415,
  RATE_LIMITED: 429,
  TOO_MANY_SOCKETS: 429,
  SERVER_FULL: 503,
  BUSY: 503,
  DB_UNAVAILABLE: 503,
  OUTCOME_UNKNOWN: 503,
  NOT_READY: 503,
  INTERNAL: 500,
};

export const STATUS_LINES: Readonly<Record<number, string>> = {
  200: '200 OK',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  421: '421 Misdirected Request',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

export const httpStatus = (err: ServiceError): number => STATUS[err.code];

/** Every HTTP error body: `{"status":0,"message":...}`. */
export const errorBody = (err: ServiceError): string => JSON.stringify({ status: 0, message: err.message });
