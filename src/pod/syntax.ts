/**
 * Bounds and error texts for untrusted manifest files. A manifest may be a symlink to any file on
 * the host (followed as root, as the kubelet does), and its parse errors end up in events that
 * `kubectl get events` shows: so errors say where (line and column) and what kind of problem,
 * never which bytes. JavaScript's and the YAML library's own messages quote the input, so they
 * are never passed on.
 */

/**
 * Deepest nesting of objects and lists a manifest may have (the top-level object is level 1).
 * The deepest pod fields (affinity terms, ephemeral volume templates) are about 12 levels down;
 * 100 leaves room and stays far below where recursive code overflows the stack (canonical JSON
 * and structuredClone at a few thousand levels, the YAML composer at about 800).
 */
export const MAX_MANIFEST_DEPTH = 100;

export interface SyntaxProblem {
  /** UTF-16 offset into the text. */
  readonly offset: number;
  readonly reason: string;
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const HEX4 = /[0-9a-fA-F]{4}/y;
const SIMPLE_ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);
const ARRAY = 0;
const OBJECT = 1;

/**
 * Checks `text` against the JSON grammar (RFC 8259, what JSON.parse accepts) without building
 * anything and without recursion, and returns the first problem: a syntax error, or an object or
 * list opened deeper than `maxDepth`. `undefined` means JSON.parse will accept the text.
 */
export function scanJSON(text: string, maxDepth = MAX_MANIFEST_DEPTH): SyntaxProblem | undefined {
  const n = text.length;
  const stack: number[] = [];
  let i = 0;
  let expect: 'value' | 'key' | 'colon' | 'after' = 'value';
  const problem = (reason: string, offset = i): SyntaxProblem => ({ offset, reason });
  const skipWhitespace = () => {
    while (i < n && WS.has(text.charCodeAt(i))) i++;
  };
  /** At a `"`: moves past the closing quote, or returns the problem. */
  const string = (): SyntaxProblem | undefined => {
    i++;
    for (;;) {
      if (i >= n) return problem('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return undefined;
      }
      if (c < 0x20) return problem('control character in string');
      if (c !== 0x5c) {
        i++;
        continue;
      }
      const e = text[i + 1];
      if (e === 'u') {
        HEX4.lastIndex = i + 2;
        if (!HEX4.test(text)) return problem('bad escape in string');
        i += 6;
      } else if (e !== undefined && SIMPLE_ESCAPES.has(e)) {
        i += 2;
      } else {
        return problem('bad escape in string');
      }
    }
  };
  const open = (kind: number): SyntaxProblem | undefined => {
    if (stack.length >= maxDepth) return problem(`nested deeper than ${maxDepth} levels`);
    stack.push(kind);
    i++;
    skipWhitespace();
    const close = kind === OBJECT ? '}' : ']';
    if (text[i] === close) {
      stack.pop();
      i++;
      expect = 'after';
    } else {
      expect = kind === OBJECT ? 'key' : 'value';
    }
    return undefined;
  };

  for (;;) {
    skipWhitespace();
    if (i >= n) return expect === 'after' && stack.length === 0 ? undefined : problem('unexpected end of input');
    const ch = text[i] ?? '';
    let p: SyntaxProblem | undefined;
    switch (expect) {
      case 'value':
        if (ch === '{' || ch === '[') {
          p = open(ch === '{' ? OBJECT : ARRAY);
          if (p) return p;
          continue;
        }
        if (ch === '"') {
          p = string();
          if (p) return p;
          expect = 'after';
          continue;
        }
        if (ch === '-' || (ch >= '0' && ch <= '9')) {
          NUMBER.lastIndex = i;
          if (!NUMBER.test(text)) return problem('invalid number');
          i = NUMBER.lastIndex;
          expect = 'after';
          continue;
        }
        {
          const literal = ['true', 'false', 'null'].find((w) => text.startsWith(w, i));
          if (literal === undefined) return problem('unexpected character');
          i += literal.length;
          expect = 'after';
        }
        continue;
      case 'key':
        if (ch !== '"') return problem('expected a double-quoted property name');
        p = string();
        if (p) return p;
        expect = 'colon';
        continue;
      case 'colon':
        if (ch !== ':') return problem("expected ':' after a property name");
        i++;
        expect = 'value';
        continue;
      case 'after': {
        const top = stack[stack.length - 1];
        if (top === undefined) return problem('unexpected character after the end of the document');
        if (ch === ',') {
          i++;
          expect = top === OBJECT ? 'key' : 'value';
          continue;
        }
        if ((top === OBJECT && ch === '}') || (top === ARRAY && ch === ']')) {
          stack.pop();
          i++;
          continue;
        }
        return problem(top === OBJECT ? "expected ',' or '}'" : "expected ',' or ']'");
      }
    }
  }
}

/** `line L, column C` (both from 1) of a UTF-16 offset. */
export function lineColumn(text: string, offset: number): string {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    start = i + 1;
  }
  return `line ${line}, column ${offset - start + 1}`;
}

/**
 * Whether a decoded value nests objects and lists deeper than `maxDepth`; iterative, and bounded
 * by the depth itself, so shared or even circular references (YAML aliases) terminate.
 */
export function deeperThan(value: unknown, maxDepth = MAX_MANIFEST_DEPTH): boolean {
  const pending: [unknown, number][] = [[value, 1]];
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    const [v, depth] = item;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > maxDepth) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) pending.push([child, depth + 1]);
    }
  }
  return false;
}

/** The YAML library's error codes in words; its messages quote the input, the codes do not. */
const YAML_CODES: Record<string, string> = {
  BAD_INDENT: 'bad indentation',
  DUPLICATE_KEY: 'map keys must be unique',
  MISSING_CHAR: 'missing character',
  MULTILINE_IMPLICIT_KEY: 'implicit keys must be on a single line',
  RESOURCE_EXHAUSTION: 'nested too deeply',
  TAB_AS_INDENT: 'tabs are not allowed as indentation',
  UNEXPECTED_TOKEN: 'unexpected token',
};

/** A YAML syntax error as `<kind> at line L, column C`; the library's message is not used. */
export function describeYamlError(e: { code: string; linePos?: readonly { line: number; col: number }[] | undefined }): string {
  const kind = YAML_CODES[e.code] ?? e.code.toLowerCase().replaceAll('_', ' ');
  const pos = e.linePos?.[0];
  return pos ? `${kind} at line ${pos.line}, column ${pos.col}` : kind;
}

/** Why a parsed YAML document could not become a value (aliases, mostly), without its text. */
export function describeYamlConversionError(err: unknown): string {
  const message = err instanceof Error ? err.message : '';
  if (message.startsWith('Excessive alias count')) return 'too many aliases';
  if (message.startsWith('Unresolved alias')) return 'unresolved alias';
  if (message.startsWith('Converting circular structure')) return 'circular alias';
  if (err instanceof RangeError) return 'nested too deeply';
  return 'the document cannot be converted';
}
