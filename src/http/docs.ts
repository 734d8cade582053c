import { readFileSync } from 'node:fs';
import type { Router } from './router.js';

/** docs/openapi.json from the repository root; dist/src/http/ is three folders below it. */
const OPENAPI = new URL('../../../docs/openapi.json', import.meta.url);

/**
 * Serves the OpenAPI document at `GET /openapi.json`, exactly the file in the
 * repository. Read once here, at start: a missing file fails the start rather
 * than the first request.
 */
export function registerDocs(router: Router): void {
  const body = readFileSync(OPENAPI, 'utf8');
  router.get('/openapi.json', () => body);
}
