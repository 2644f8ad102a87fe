import type { NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration } from 'kubernetes-types/core/v1.js';
import type { Pod } from '../api/types.js';

/**
 * The kubelet's admission re-check of a pod against its Node object: required node affinity,
 * `spec.nodeName` and NoExecute taints (pkg/kubelet/lifecycle/predicate.go `generalFilter`:
 * `scheduler.AdmissionCheck` of pkg/scheduler/eventhandlers.go, then
 * `FindMatchingUntoleratedTaint` for pods that are not static). A pod bound with `spec.nodeName`
 * bypasses the scheduler, so this is where such a pod is refused. Pure: the caller hands in the
 * Node the kubelet would read (`getNodeAnyWay`: the apiserver's copy, else the node it registers).
 */

/** What of the Node these checks read. */
export interface AdmissionNode {
  readonly metadata?: { readonly name?: string; readonly labels?: Readonly<Record<string, string>> };
  readonly spec?: { readonly taints?: readonly Taint[] };
}

/**
 * `GetRequiredNodeAffinity(pod).Match(node)` (staging/src/k8s.io/component-helpers/scheduling/
 * corev1/nodeaffinity/nodeaffinity.go): every `nodeSelector` entry must equal the node's label,
 * and, when `requiredDuringSchedulingIgnoredDuringExecution` is set, one of its terms must match.
 */
export function matchesRequiredNodeAffinity(pod: Pick<Pod, 'spec'>, node: AdmissionNode): boolean {
  const labels = node.metadata?.labels ?? {};
  for (const [key, value] of Object.entries(pod.spec?.nodeSelector ?? {})) {
    if (!Object.hasOwn(labels, key) || labels[key] !== value) return false;
  }
  const required = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (!required) return true;
  return matchesNodeSelectorTerms(required.nodeSelectorTerms ?? [], node);
}

/**
 * `LazyErrorNodeSelector.Match`: the terms are ORed; a term with neither expressions nor fields
 * is dropped (selects nothing), so no terms at all match nothing; a term that does not parse (an
 * unknown operator, values the operator forbids) matches nothing either.
 */
export function matchesNodeSelectorTerms(terms: readonly NodeSelectorTerm[], node: AdmissionNode): boolean {
  return terms.some((term) => matchesTerm(term, node));
}

/** `nodeSelectorTerm.match`: the label expressions and the field expressions are all ANDed. */
function matchesTerm(term: NodeSelectorTerm, node: AdmissionNode): boolean {
  const expressions = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (expressions.length === 0 && fields.length === 0) return false;
  const labels = node.metadata?.labels ?? {};
  // A term that fails to parse is an error, never a match — even where an earlier requirement failed.
  const labelResults = expressions.map((r) => labelRequirementMatches(r, labels));
  const fieldResults = fields.map((r) => fieldRequirementMatches(r, node.metadata?.name ?? ''));
  if ([...labelResults, ...fieldResults].includes(undefined)) return false;
  if (labelResults.includes(false)) return false;
  // `extractNodeFields` holds `metadata.name` only when the node has a name; with no fields the
  // field selector is not consulted.
  if (fields.length && node.metadata?.name && fieldResults.includes(false)) return false;
  return true;
}

/**
 * One `matchExpressions` requirement as a label selector requirement
 * (staging/src/k8s.io/apimachinery/pkg/labels/selector.go `NewRequirement` and `Matches`): In and
 * NotIn need values, Exists and DoesNotExist none, Gt and Lt one base-10 int64; every value must be
 * a valid label value; Gt and Lt match only a label that parses as an int64. Undefined: the
 * requirement does not parse. (The key's syntax is the apiserver's validation, not checked here.)
 */
export function labelRequirementMatches(r: NodeSelectorRequirement, labels: Readonly<Record<string, string>>): boolean | undefined {
  const values = r.values ?? [];
  // `validateLabelValue` on every value: so a Gt or Lt bound is never signed ("-1" is no label value).
  if (!values.every(isLabelValue)) return undefined;
  const has = Object.hasOwn(labels, r.key);
  const value = labels[r.key];
  switch (r.operator) {
    case 'In':
      return values.length === 0 ? undefined : has && values.includes(value ?? '');
    case 'NotIn':
      return values.length === 0 ? undefined : !has || !values.includes(value ?? '');
    case 'Exists':
      return values.length ? undefined : has;
    case 'DoesNotExist':
      return values.length ? undefined : !has;
    case 'Gt':
    case 'Lt': {
      const bound = values.length === 1 ? parseInt64(values[0] ?? '') : undefined;
      if (bound === undefined) return undefined;
      const actual = has ? parseInt64(value ?? '') : undefined;
      if (actual === undefined) return false;
      return r.operator === 'Gt' ? actual > bound : actual < bound;
    }
    default:
      return undefined;
  }
}

/**
 * One `matchFields` requirement (`nodeSelectorRequirementsAsFieldSelector`): In or NotIn with
 * exactly one value, against the node's fields — `metadata.name` only. Undefined: does not parse.
 */
export function fieldRequirementMatches(r: NodeSelectorRequirement, nodeName: string): boolean | undefined {
  const values = r.values ?? [];
  if ((r.operator !== 'In' && r.operator !== 'NotIn') || values.length !== 1) return undefined;
  const actual = r.key === 'metadata.name' ? nodeName : '';
  return r.operator === 'In' ? actual === values[0] : actual !== values[0];
}

/** staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go `IsValidLabelValue`. */
export function isLabelValue(v: string): boolean {
  return v.length <= 63 && /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(v);
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Go's `strconv.ParseInt(s, 10, 64)`: an optional sign and decimal digits, in the int64 range. */
export function parseInt64(s: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const n = BigInt(s);
  return n < INT64_MIN || n > INT64_MAX ? undefined : n;
}

/** `nodename.Fits` (pkg/scheduler/framework/plugins/nodename/node_name.go): unset, or the node's name. */
export function fitsNodeName(pod: Pick<Pod, 'spec'>, node: AdmissionNode): boolean {
  const wanted = pod.spec?.nodeName;
  return !wanted || wanted === node.metadata?.name;
}

/**
 * `Toleration.ToleratesTaint` (staging/src/k8s.io/api/core/v1/toleration.go): the effect, when
 * set, must be the taint's; the key, when set, the taint's; operator Equal (or empty) compares
 * values, Exists tolerates any value (with an empty key: every taint). Lt and Gt belong to the
 * alpha TaintTolerationComparisonOperators gate (off by default in 1.37) and tolerate nothing.
 */
export function toleratesTaint(toleration: Toleration, taint: Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  switch (toleration.operator ?? '') {
    case '':
    case 'Equal':
      return (toleration.value ?? '') === (taint.value ?? '');
    case 'Exists':
      return true;
    default:
      return false;
  }
}

/**
 * The first of the node's NoExecute taints no toleration of the pod tolerates
 * (staging/src/k8s.io/component-helpers/scheduling/corev1/helpers.go
 * `FindMatchingUntoleratedTaint` with the kubelet's NoExecute filter), or undefined.
 */
export function untoleratedNoExecuteTaint(taints: readonly Taint[], tolerations: readonly Toleration[]): Taint | undefined {
  return taints.find((taint) => taint.effect === 'NoExecute' && !tolerations.some((t) => toleratesTaint(t, taint)));
}
