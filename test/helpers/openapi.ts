import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';

/**
 * openapi.yaml read as data for the tests that hold the server to it: every operation with its
 * parameters resolved, and a JSON Schema validator for each documented response body.
 */

export const httpMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

export interface ParameterSchema {
  type?: string;
  enum?: unknown[];
  items?: ParameterSchema;
  minimum?: number;
}
export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema?: ParameterSchema;
}
interface Ref {
  $ref: string;
}
export interface Response {
  description: string;
  content?: Record<string, { schema?: unknown }>;
}
interface RawOperation {
  operationId?: string;
  parameters?: Array<Parameter | Ref>;
  responses: Record<string, Response | Ref>;
}
export interface Spec {
  openapi: string;
  paths: Record<string, Record<string, RawOperation>>;
  components: {
    parameters: Record<string, Parameter>;
    responses: Record<string, Response>;
    schemas: Record<string, unknown>;
  };
}

export interface Operation {
  method: string;
  /** The path template, `{ns}` style. */
  path: string;
  id: string;
  parameters: Parameter[];
  /** Status code (or `default`) → the response, references resolved. */
  responses: Map<string, Response>;
}

export function loadSpec(): Spec {
  return parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as Spec;
}

function isRef(x: object): x is Ref {
  return '$ref' in x;
}

function resolve<T>(spec: Spec, x: T | Ref, section: 'parameters' | 'responses'): T {
  if (!isRef(x as object)) return x as T;
  const name = (x as Ref).$ref.split('/').pop() ?? '';
  const found = spec.components[section][name];
  if (!found) throw new Error(`unresolved ${(x as Ref).$ref}`);
  return found as T;
}

export function operations(spec: Spec): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!(httpMethods as readonly string[]).includes(method)) continue;
      ops.push({
        method: method.toUpperCase(),
        path,
        id: op.operationId ?? `${method} ${path}`,
        parameters: (op.parameters ?? []).map((p) => resolve<Parameter>(spec, p, 'parameters')),
        responses: new Map(Object.entries(op.responses).map(([code, r]) => [code, resolve<Response>(spec, r, 'responses')])),
      });
    }
  }
  return ops;
}

/**
 * Validates a body against a response's documented schema. The document is OpenAPI 3.0, whose
 * schema objects are JSON Schema plus a few annotation keywords (`example`), so ajv reads them
 * with strict mode off; `$ref`s point into the whole document, registered once.
 */
export class ResponseValidator {
  private readonly ajv = new Ajv({ strict: false, allErrors: true });
  private readonly cache = new Map<unknown, ValidateFunction>();

  constructor(spec: Spec) {
    addFormats.default(this.ajv);
    this.ajv.addSchema({ $id: 'openapi.json', components: spec.components }, 'openapi.json');
  }

  /** Undefined when `body` matches `schema`, else ajv's errors as text. */
  check(schema: unknown, body: unknown): string | undefined {
    let validate = this.cache.get(schema);
    if (!validate) {
      const rewritten = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/')) as object;
      validate = this.ajv.compile(rewritten);
      this.cache.set(schema, validate);
    }
    return validate(body) ? undefined : this.ajv.errorsText(validate.errors);
  }
}
