/**
 * Checks real answers against docs/openapi.json: the operation (or, for 404 and 405, the shared
 * response) must document the status, its content type and required headers, and the body must
 * validate against the documented schema with ajv's JSON Schema 2020-12 validator (OpenAPI 3.1's
 * dialect). Not a test file itself: tap only runs `*.test.js`.
 */
import { readFileSync } from 'node:fs';
import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { Test } from 'tap';
import type { Reply } from '../helpers/service.js';

// Both are CommonJS modules whose default export TypeScript sees one level down. `not: {required}` (a
// key that must be absent) names keys with no schema of their own, which strictRequired would refuse.
const Ajv2020 = Ajv2020Module.default ?? Ajv2020Module;
const addFormats = addFormatsModule.default ?? addFormatsModule;

export const OPENAPI_PATH = new URL('../../../docs/openapi.json', import.meta.url).pathname;
export const openapiText = (): string => readFileSync(OPENAPI_PATH, 'utf8');

type Obj = Record<string, any>;

export interface Checker {
  /** The document with every $ref inlined. */
  doc: Obj;
  /** The documented response for an answer: the operation's, or the shared one for 404 and 405. */
  response(method: string, path: string, status: number): Obj | undefined;
  /** Asserts that a real answer is documented and matches its schema and headers. */
  check(t: Test, method: string, path: string, reply: Reply): void;
  /** Errors of validating `value` against a named component schema ([] when valid). */
  errorsOf(schema: string, value: unknown): string[];
}

export async function loadChecker(): Promise<Checker> {
  const doc = (await SwaggerParser.dereference(JSON.parse(openapiText()))) as Obj;
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
  addFormats(ajv);
  const compiled = new Map<object, ReturnType<typeof ajv.compile>>();
  const validator = (schema: object) => {
    let v = compiled.get(schema);
    if (!v) compiled.set(schema, (v = ajv.compile(schema)));
    return v;
  };
  const errorsText = (schema: object, value: unknown): string[] => {
    const v = validator(schema);
    return v(value) ? [] : (v.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
  };

  const response = (method: string, path: string, status: number): Obj | undefined => {
    if (status === 421) return doc.components.responses.Misdirected;
    const item = doc.paths[path] as Obj | undefined;
    if (!item) return status === 404 ? doc.components.responses.NotFound : undefined;
    const op = item[method.toLowerCase()] as Obj | undefined;
    if (!op) return status === 405 ? doc.components.responses.MethodNotAllowed : undefined;
    return op.responses[String(status)];
  };

  return {
    doc,
    response,
    errorsOf: (name, value) => errorsText(doc.components.schemas[name], value),
    check(t, method, path, reply) {
      const where = `${method} ${path} ${reply.status}`;
      const documented = response(method, path, reply.status);
      if (!t.ok(documented, `${where} is documented`)) return;
      for (const [name, header] of Object.entries((documented!.headers ?? {}) as Obj)) {
        const value = reply.headers.get(name);
        if (header.required) t.ok(value, `${where} has ${name}`);
        if (value !== null && header.schema?.type === 'integer') t.match(value, /^\d+$/, `${where} ${name} is an integer`);
      }
      const type = reply.headers.get('content-type') ?? '';
      const media = documented!.content?.[type] as Obj | undefined;
      if (!t.ok(media, `${where} content-type ${type} is documented`)) return;
      if (type === 'application/json') t.same(errorsText(media!.schema, reply.body), [], `${where} body matches its schema`);
      else t.same(errorsText(media!.schema, reply.text), [], `${where} body matches its schema`);
    },
  };
}
