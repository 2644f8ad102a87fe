import { badRequest } from '../api/errors.js';
import { isDNS1123Subdomain, maxLenError, regexError } from '../api/names.js';

/**
 * Label and field selectors as the apiserver parses them (k8s.io/apimachinery/pkg/labels and
 * pkg/fields), limited to what a single node needs: equality, inequality and existence. Parse
 * errors become 400 BadRequest Status objects with the apiserver's wording.
 */

export type SelectorOperator = '=' | '!=';

export interface FieldRequirement {
  readonly field: string;
  readonly op: SelectorOperator;
  readonly value: string;
}

export type LabelRequirement =
  | { readonly key: string; readonly op: SelectorOperator; readonly value: string }
  | { readonly key: string; readonly op: 'exists' | '!exists' };

// apimachinery's qualified-name and label-value formats and messages (util/validation).
const qualifiedNameFmt = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const qualifiedNameErrMsg = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const qualifiedNameRe = new RegExp(`^${qualifiedNameFmt}$`);
const labelValueFmt = `(${qualifiedNameFmt})?`;
const labelValueErrMsg =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const labelValueRe = new RegExp(`^${labelValueFmt}$`);
const labelMaxLength = 63;

/** `IsQualifiedName`: a label key, `[prefix/]name`. Empty when valid. */
function qualifiedNameErrors(key: string): string[] {
  const parts = key.split('/');
  let name: string;
  const errs: string[] = [];
  if (parts.length === 1) {
    name = parts[0] ?? '';
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    name = parts[1] ?? '';
    if (prefix === '') errs.push('prefix part must be non-empty');
    else errs.push(...isDNS1123Subdomain(prefix).map((m) => `prefix part ${m}`));
  } else {
    return [
      `a qualified name ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name === '') errs.push('name part must be non-empty');
  else if (name.length > labelMaxLength) errs.push(`name part ${maxLenError(labelMaxLength)}`);
  if (name !== '' && !qualifiedNameRe.test(name)) {
    errs.push(`name part ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')}`);
  }
  return errs;
}

function labelValueErrors(value: string): string[] {
  const errs: string[] = [];
  if (value.length > labelMaxLength) errs.push(maxLenError(labelMaxLength));
  if (!labelValueRe.test(value)) errs.push(regexError(labelValueErrMsg, labelValueFmt, 'MyValue', 'my_value', '12345'));
  return errs;
}

function requirementError(path: string, value: string, errs: string[]): never {
  throw badRequest(`unable to parse requirement: ${path}: Invalid value: ${JSON.stringify(value)}: ${errs.join('; ')}`);
}

/**
 * Parses a `labelSelector` query value: `a=b`, `a==b`, `a!=b`, `a`, `!a`, comma-separated (AND).
 * Set-based terms (`in`, `notin`) are refused with 400 rather than silently ignored.
 */
export function parseLabelSelector(selector: string | undefined): LabelRequirement[] {
  if (selector === undefined || selector.trim() === '') return [];
  if (/[()]/.test(selector) || /\s(in|notin)\s/.test(selector)) {
    throw badRequest(`unable to parse requirement: set-based label selectors are not supported: ${JSON.stringify(selector)}`);
  }
  const out: LabelRequirement[] = [];
  for (const rawTerm of selector.split(',')) {
    const term = rawTerm.trim();
    if (term === '') throw badRequest(`unable to parse requirement: empty term in label selector ${JSON.stringify(selector)}`);
    const m = /^([^=!\s]*)\s*(!=|==|=)\s*(.*)$/.exec(term);
    if (m) {
      const key = m[1] ?? '';
      const value = m[3] ?? '';
      const keyErrs = qualifiedNameErrors(key);
      if (keyErrs.length > 0) requirementError('key', key, keyErrs);
      const valueErrs = labelValueErrors(value);
      if (valueErrs.length > 0) requirementError(`values[0][${key}]`, value, valueErrs);
      out.push({ key, op: m[2] === '!=' ? '!=' : '=', value });
      continue;
    }
    const negated = term.startsWith('!');
    const key = negated ? term.slice(1).trim() : term;
    const keyErrs = qualifiedNameErrors(key);
    if (keyErrs.length > 0) requirementError('key', key, keyErrs);
    out.push({ key, op: negated ? '!exists' : 'exists' });
  }
  return out;
}

export function matchesLabels(reqs: readonly LabelRequirement[], labels: Readonly<Record<string, string>> | undefined): boolean {
  const l = labels ?? {};
  for (const r of reqs) {
    const has = Object.hasOwn(l, r.key);
    switch (r.op) {
      case 'exists':
        if (!has) return false;
        break;
      case '!exists':
        if (has) return false;
        break;
      case '=':
        if (!has || l[r.key] !== r.value) return false;
        break;
      case '!=':
        // labels.Selector: a missing key satisfies `!=`.
        if (has && l[r.key] === r.value) return false;
        break;
    }
  }
  return true;
}

/**
 * Parses a `fieldSelector` query value (`a=b,c!=d`, `==` accepted) with pkg/fields escaping
 * (`\,` `\=` `\\` in values). A field outside `allowed` is the apiserver's
 * `field label not supported: <field>` 400.
 */
export function parseFieldSelector(selector: string | undefined, allowed: ReadonlySet<string>): FieldRequirement[] {
  if (selector === undefined || selector === '') return [];
  const out: FieldRequirement[] = [];
  for (const term of splitUnescaped(selector)) {
    const m = /^([^=!]*)(!=|==|=)(.*)$/s.exec(term);
    if (!m) throw badRequest(`invalid selector: '${selector}'; can't understand '${term}'`);
    const field = (m[1] ?? '').trim();
    if (!allowed.has(field)) throw badRequest(`field label not supported: ${field}`);
    out.push({ field, op: m[2] === '!=' ? '!=' : '=', value: unescapeValue(m[3] ?? '', selector) });
  }
  return out;
}

/** Splits on commas that are not escaped with a backslash; escapes stay in place. */
function splitUnescaped(s: string): string[] {
  const terms: string[] = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '\\' && i + 1 < s.length) {
      cur += c + s[i + 1];
      i++;
    } else if (c === ',') {
      terms.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  terms.push(cur);
  return terms;
}

/** pkg/fields `UnescapeValue`: only `\\`, `\,` and `\=` are valid escapes. */
function unescapeValue(v: string, selector: string): string {
  let out = '';
  for (let i = 0; i < v.length; i++) {
    const c = v[i];
    if (c !== '\\') {
      if (c === '=' || c === ',') throw badRequest(`invalid selector: '${selector}'; unescaped '${c}' in field value`);
      out += c;
      continue;
    }
    const next = v[i + 1];
    if (next !== '\\' && next !== ',' && next !== '=') throw badRequest(`invalid selector: '${selector}'; invalid escape sequence in field value`);
    out += next;
    i++;
  }
  return out;
}

export function matchesFields(reqs: readonly FieldRequirement[], get: (field: string) => string | undefined): boolean {
  for (const r of reqs) {
    const actual = get(r.field) ?? '';
    if ((actual === r.value) !== (r.op === '=')) return false;
  }
  return true;
}
