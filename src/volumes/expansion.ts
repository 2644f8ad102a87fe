/**
 * `$(VAR)` expansion as the kubelet does it (third_party/forked/golang/expansion): `$$` is an
 * escaped `$`, `$(NAME)` is replaced by the mapping, an unknown name is left as `$(NAME)`, an
 * unterminated `$(` and a `$` before anything else are copied as they are.
 */
export function expand(input: string, mapping: (name: string) => string): string {
  let out = '';
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== '$' || cursor + 1 >= input.length) continue;
    out += input.slice(checkpoint, cursor);
    const rest = input.slice(cursor + 1);
    let advance = 1;
    if (rest[0] === '$') {
      out += '$';
    } else if (rest[0] === '(') {
      const close = rest.indexOf(')', 1);
      if (close >= 0) {
        out += mapping(rest.slice(1, close));
        advance = close + 1;
      } else {
        out += '$(';
      }
    } else {
      out += `$${rest[0]}`;
    }
    cursor += advance;
    checkpoint = cursor + 1;
  }
  return out + input.slice(checkpoint);
}

/** The kubelet's `MappingFuncFor`: the first map holding the name wins; unknown names stay `$(NAME)`. */
export function mappingFor(...maps: ReadonlyArray<ReadonlyMap<string, string>>): (name: string) => string {
  return (name) => {
    for (const m of maps) {
      const v = m.get(name);
      if (v !== undefined) return v;
    }
    return `$(${name})`;
  };
}
