import { readFileSync } from 'node:fs';
import { isMapping, parseMapping } from '../config/yaml-mapping.js';
import { SUBRESOURCES, type Attributes, type Authorizer, type Verb } from './types.js';

/**
 * `--authorization-policy-file`: a local stand-in for the SubjectAccessReview webhook when nodelet
 * runs without an apiserver. Rules are RBAC-shaped and only ever grant:
 *
 *   rules:
 *     - groups: [system:masters]          # and/or users: [alice]; "*" matches anyone
 *       verbs: ["*"]                      # get, create, update, patch, delete
 *       resources: ["nodes/*"]            # nodes/{proxy,log,stats,metrics,pods,healthz,configz,checkpoint}
 *     - users: [viewer]
 *       verbs: [get]
 *       resources: [nodes/pods, nodes/stats]
 *
 * A request is allowed when one rule matches its user (name or any group), verb and
 * `nodes/<subresource>`; otherwise it is denied (there is no deny rule, as in RBAC).
 */

export class PolicyError extends Error {}

const VERBS: readonly string[] = ['get', 'create', 'update', 'patch', 'delete', '*'];
const RESOURCES: readonly string[] = ['nodes/*', ...SUBRESOURCES.map((s) => `nodes/${s}`)];
const RULE_KEYS = new Set(['users', 'groups', 'verbs', 'resources']);

interface Rule {
  readonly users: ReadonlySet<string>;
  readonly groups: ReadonlySet<string>;
  readonly verbs: ReadonlySet<string>;
  readonly resources: ReadonlySet<string>;
}

function stringList(v: unknown, where: string, allowed?: readonly string[]): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x === '')) throw new PolicyError(`${where} must be a list of non-empty strings`);
  const list = v as string[];
  const bad = allowed ? list.find((x) => !allowed.includes(x)) : undefined;
  if (bad !== undefined) throw new PolicyError(`${where}: unsupported value ${JSON.stringify(bad)} (allowed: ${allowed?.join(', ')})`);
  return list;
}

export function parsePolicy(text: string): Rule[] {
  const root = parseMapping(text, 'a mapping with a "rules" list', (why) => new PolicyError(why));
  const extra = Object.keys(root).find((k) => k !== 'rules' && k !== 'apiVersion' && k !== 'kind');
  if (extra !== undefined) throw new PolicyError(`unknown field ${JSON.stringify(extra)}`);
  const rules: unknown = root.rules;
  if (!Array.isArray(rules)) throw new PolicyError('"rules" must be a list');
  return rules.map((r: unknown, i) => {
    const where = `rules[${i}]`;
    if (!isMapping(r)) throw new PolicyError(`${where} must be a mapping`);
    const unknown = Object.keys(r).find((k) => !RULE_KEYS.has(k));
    if (unknown !== undefined) throw new PolicyError(`${where}: unknown field ${JSON.stringify(unknown)}`);
    const users = stringList(r.users, `${where}.users`);
    const groups = stringList(r.groups, `${where}.groups`);
    const verbs = stringList(r.verbs, `${where}.verbs`, VERBS);
    const resources = stringList(r.resources, `${where}.resources`, RESOURCES);
    if (users.length + groups.length === 0) throw new PolicyError(`${where} names no users or groups`);
    if (verbs.length === 0) throw new PolicyError(`${where} has no verbs`);
    if (resources.length === 0) throw new PolicyError(`${where} has no resources`);
    return { users: new Set(users), groups: new Set(groups), verbs: new Set(verbs), resources: new Set(resources) };
  });
}

function matches(rule: Rule, attrs: Attributes): boolean {
  const who = rule.users.has('*') || rule.users.has(attrs.user.name) || attrs.user.groups.some((g) => rule.groups.has(g)) || rule.groups.has('*');
  const verb: Verb = attrs.verb;
  return who && (rule.verbs.has('*') || rule.verbs.has(verb)) && (rule.resources.has('nodes/*') || rule.resources.has(`nodes/${attrs.subresource}`));
}

export class PolicyAuthorizer implements Authorizer {
  readonly alwaysAllow = false;
  readonly #rules: readonly Rule[];

  constructor(rules: readonly Rule[]) {
    this.#rules = rules;
  }

  static fromFile(path: string): PolicyAuthorizer {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new PolicyError(`cannot read authorization policy file ${JSON.stringify(path)}: ${(err as Error).message}`);
    }
    try {
      return new PolicyAuthorizer(parsePolicy(text));
    } catch (err) {
      throw new PolicyError(`authorization policy file ${JSON.stringify(path)}: ${(err as Error).message}`);
    }
  }

  authorize(attrs: Attributes): boolean {
    return this.#rules.some((r) => matches(r, attrs));
  }
}

/** The kubelet's `AlwaysAllow` mode. */
export const alwaysAllow: Authorizer = Object.freeze({ alwaysAllow: true, authorize: () => true });

/**
 * The apiserver's privileged-group authorizer in front of `next`: members of `group` (the
 * embedded default's admin, in `system:masters`) are allowed everything, everyone else is asked
 * to `next`. In front of AlwaysAllow it is AlwaysAllow.
 */
export function privilegedGroup(group: string, next: Authorizer): Authorizer {
  if (next.alwaysAllow) return next;
  return Object.freeze({
    alwaysAllow: false,
    authorize: (attrs: Attributes) => attrs.user.groups.includes(group) || next.authorize(attrs),
  });
}
