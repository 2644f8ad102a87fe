// `npm run lint` (part of `npm test`): a few rules that catch real bugs, and the layering of src/
// that docs/architecture.md describes, as a rule (eslint/layering.js). test/ and bench/ get the same
// rules but the layering (they import any part of src/ they exercise), with tap's un-awaited
// `t.test(…)` allowed: tap awaits its subtests itself; and test/ imports nothing from bench/.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { layeringRule } from './eslint/layering.js';

const F = 'fastify';
const D = 'dockerode';
const why = 'below the HTTP layer and the wiring: docs/architecture.md, "Layers"';
/** Wiring and the HTTP layer sit on top: nothing below imports them. */
const top = ['server', 'cli', 'nodelet'];

/**
 * The "must not import" column of docs/architecture.md's layer table, one entry per folder or
 * top-level file of src/ (test/unit/docs/architecture.test.ts keeps the two equal). `deny`: folders
 * of src/ or packages; `allowOnly`: the only folders of src/ a layer may import (packages stay
 * allowed); `why`: the reason the lint message gives.
 */
export const layers = {
  api: { allowOnly: ['config'], deny: [F, D], why: 'api/ is pure: everything but config/ types' },
  config: { allowOnly: [], deny: [F, D], why: 'config/ imports nothing else of src/' },
  version: { allowOnly: [], deny: [F, D], why: 'a constant' },
  async: { allowOnly: [], deny: [F, D], why: 'small async helpers, pure' },
  host: { deny: [F, D, ...top], why: 'host/ is the contract between server/ and kubelet/' },
  pod: { deny: [F, ...top], why },
  status: { deny: [F, D, ...top], why },
  node: { deny: [F, D, ...top], why },
  cluster: { deny: [F, D, ...top], why: 'cluster mode, as node/' },
  apiserver: { deny: [F, D, ...top], why: 'the apiserver client, as node/' },
  certificate: { deny: [F, D, ...top], why: 'TLS bootstrap and certificate rotation by CSR, a client of the cluster as cluster/' },
  runtime: { deny: [F, ...top], why },
  network: { allowOnly: ['api', 'config', 'logging', 'async'], deny: [F, D, ...top], why: 'network/ runs CNI plugins for runtime/; it knows no engine and no kubelet' },
  cgroups: { allowOnly: ['api', 'logging'], deny: [F, D, ...top], why: 'cgroups/ writes the pod cgroups for kubelet/; it knows no engine' },
  eviction: { allowOnly: ['api', 'config', 'logging'], deny: [F, D, ...top], why: 'eviction/ is the pure core of the eviction manager: readings, usage, kills and events are injected' },
  kubelet: { deny: [F, ...top], why: 'kubelet/ implements host/; it never sees the HTTP layer' },
  volumes: { deny: [F, ...top], why: 'part of the kubelet, as kubelet/' },
  streaming: { deny: [F, D, ...top], why: 'pure protocol code' },
  watch: { deny: [F, D, ...top], why: 'watch caches, pure as streaming/' },
  auth: { deny: [F, ...top], why: 'auth/ is pure of the HTTP framework; its Fastify hook is server/security.ts' },
  server: { deny: [D, 'cli', 'nodelet'], why: 'server/ reaches Docker only through host/' },
  metrics: { deny: [F, ...top], why },
  stats: { deny: [F, ...top], why },
  events: { deny: [F, ...top], why },
  logging: { deny: [F, ...top], why },
  nodelet: { deny: ['cli'], why: 'cli.ts parses and calls nodelet.ts' },
};

/** Edges the table forbids that the tree still has: file (from the repo root), target, reason. */
const exceptions = [
];

/** The rules every linted file gets (the layering comes on top for src/). */
const bugRules = {
  '@typescript-eslint/no-floating-promises': 'error',
  '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
  '@typescript-eslint/no-explicit-any': 'warn',
  '@typescript-eslint/explicit-module-boundary-types': 'off',
  'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
  '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
};

const shared = {
  extends: [js.configs.recommended, ...tseslint.configs.recommended],
  languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
  linterOptions: { reportUnusedDisableDirectives: 'error' },
};

export default tseslint.config(
  { ignores: ['dist/**', 'dist-bench/**', 'node_modules/**', 'tmp/**', 'eslint/**', 'eslint.config.js'] },
  {
    ...shared,
    files: ['src/**/*.ts'],
    plugins: { nodelet: { rules: { layering: layeringRule } } },
    rules: { ...bugRules, 'nodelet/layering': ['error', { layers, exceptions }] },
  },
  {
    ...shared,
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      ...bugRules,
      // `t.test(…)` returns a promise tap awaits itself, in order; every other promise must be handled.
      '@typescript-eslint/no-floating-promises': ['error', { allowForKnownSafeCalls: [{ from: 'package', name: 'test', package: '@tapjs/test' }] }],
    },
  },
  {
    // bench/ may import test/ (the protocol clients in test/clients, the harnesses in test/helpers),
    // never the reverse: the tests must build and run without the bench. Only the unit tests of the
    // bench's own pure code (test/unit/bench) import what they test.
    files: ['test/**/*.ts'],
    ignores: ['test/unit/bench/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: ['**/bench', '**/bench/**'], message: 'test/ never imports bench/: move what both need under test/ (test/clients, test/helpers).' }] }],
    },
  },
);
