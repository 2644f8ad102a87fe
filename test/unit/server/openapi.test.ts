import { Validator } from '@seriousme/openapi-schema-validator';
import t from 'tap';
import { loadSpec, operations } from '../../helpers/openapi.js';
import { build, FakeHost, ZPAGES } from './fixtures/fake-host.js';

/**
 * openapi.yaml and the registered routes must describe the same surface: every `METHOD path`
 * Fastify registers (minus its automatic HEAD routes and the 405 catch-alls) is in the spec, and
 * every operation in the spec is registered.
 */

/** `:ns` → `{ns}`, and no trailing slash (the server ignores it). */
function normalize(url: string): string {
  const p = url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
  return p.length > 1 ? p.replace(/\/+$/, '') : p;
}

const spec = loadSpec();

async function registeredRoutes(): Promise<Set<string>> {
  const app = build(new FakeHost(), { zpages: ZPAGES });
  const routes = new Set<string>();
  app.addHook('onRoute', (route) => {
    if (route.config?.methodNotAllowed) return;
    for (const m of [route.method].flat()) {
      if (m !== 'HEAD') routes.add(`${m} ${normalize(route.url)}`);
    }
  });
  await app.ready();
  await app.close();
  return routes;
}

function specOperations(): Set<string> {
  return new Set(operations(spec).map((op) => `${op.method} ${normalize(op.path)}`));
}

t.test('spec is OpenAPI 3.0', async (t) => {
  t.match(spec.openapi, /^3\.0\.\d+$/);
});

t.test('the document validates against the OpenAPI 3.0 schema', async (t) => {
  const result = await new Validator().validate(spec as unknown as Record<string, unknown>);
  t.same(result.errors ?? [], [], 'no schema violations');
  t.equal(result.valid, true);
  // The validator must be able to fail: the mistake this test was written for (a schema given
  // as a string) is refused.
  const broken = structuredClone(spec) as unknown as Record<string, unknown> & { components: { schemas: Record<string, unknown> } };
  broken.components.schemas.Broken = { type: 'object', properties: { description: '{ type: string }' } };
  t.equal((await new Validator().validate(broken)).valid, false, 'a string where a schema belongs is refused');
});

t.test('every registered route is in openapi.yaml and vice versa', async (t) => {
  const routes = await registeredRoutes();
  const ops = specOperations();
  // Guard against a collector that silently saw nothing.
  t.ok(routes.size >= 16, `collected ${routes.size} routes`);
  const missingFromSpec = [...routes].filter((r) => !ops.has(r)).sort();
  const notRegistered = [...ops].filter((o) => !routes.has(o)).sort();
  t.same(missingFromSpec, [], 'registered routes missing from openapi.yaml');
  t.same(notRegistered, [], 'openapi.yaml operations with no registered route');
});

t.test('every {param} in a spec path is declared as a path parameter', async (t) => {
  for (const op of operations(spec)) {
    const wanted = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    const declared = op.parameters.filter((p) => p.in === 'path').map((p) => p.name);
    t.same(declared.sort(), [...wanted].sort(), `${op.method} ${op.path}`);
  }
});
