import { ContainerConfigError } from './errors.js';

/**
 * How much text `$(VAR)` expansion may produce. The kubelet's expansion
 * (third_party/forked/golang/expansion/expand.go) has no bound, so a few hundred bytes of spec
 * (`V{i}=$(V{i-1})$(V{i-1})`, 22 entries) double into hundreds of MiB that nodelet would then
 * hold, log, record and report. The first two caps are what the kernel accepts anyway, so they
 * refuse nothing the container could have used; the third is the kernel's default:
 *
 * - one env value, command or args element: the kernel's `MAX_ARG_STRLEN` (32 pages, 128 KiB;
 *   linux `include/uapi/linux/binfmts.h`). `execve` fails with E2BIG on any longer argv or envp
 *   string, whatever the rlimits, so the container's process could never start with it.
 * - a `subPathExpr`: `PATH_MAX` (4096 bytes, linux `include/uapi/linux/limits.h`); the kernel
 *   refuses a longer path (ENAMETOOLONG), and the host path is longer still.
 * - all of one container's env values, command, args and expanded subpaths together: 2 MiB,
 *   `ARG_MAX` as `getconf ARG_MAX` reports it under the default 8 MiB stack (linux `fs/exec.c`
 *   allows argv + envp a quarter of the stack rlimit, never above 6 MiB). It is also below the
 *   apiserver's 3 MiB request limit (k8s `staging/src/k8s.io/apiserver/pkg/server/config.go`,
 *   `MaxRequestBodyBytes`), the most text a pod spec can carry: past that, the size comes from
 *   amplification, not from the spec. Values read from configMaps, secrets and the downward API
 *   count too (the same 1 MiB key referenced by many entries is copied that often), but only
 *   expanded values have the per-value cap; the service-link variables are not counted. Only a
 *   container whose stack rlimit was raised above 8 MiB could have started with more. Below the
 *   cap the kernel remains the judge (it also counts `NAME=`, the NULs and the pointers), as on
 *   the kubelet.
 *
 * Sizes are UTF-8 bytes, as the kernel and Docker see them.
 */
export const MAX_EXPANDED_VALUE_BYTES = 128 * 1024;
export const MAX_SUBPATH_BYTES = 4096;
export const MAX_CONTAINER_EXPANSION_BYTES = 2 * 1024 * 1024;

/** Thrown by `expand` when the output would pass `maxBytes`; `ExpansionBudget` names the field. */
export class ExpansionTooLong extends Error {
  constructor(readonly maxBytes: number) {
    super(`$(VAR) expansion would exceed ${maxBytes} bytes`);
    this.name = 'ExpansionTooLong';
  }
}

/**
 * `$(VAR)` expansion as the kubelet does it (third_party/forked/golang/expansion): `$$` is an
 * escaped `$`, `$(NAME)` is replaced by the mapping, an unknown name is left as `$(NAME)`, an
 * unterminated `$(` and a `$` before anything else are copied as they are. Throws
 * `ExpansionTooLong` before the output would pass `maxBytes` (UTF-8), so the work and the memory
 * are bounded by the cap, not by what the mapping could produce.
 */
export function expand(input: string, mapping: (name: string) => string, maxBytes = Infinity): string {
  let out = '';
  let bytes = 0;
  const append = (piece: string) => {
    // A UTF-16 unit is at least one UTF-8 byte: a piece longer in units than what is left is
    // refused unmeasured, so no piece is ever measured past the cap.
    if (piece.length > maxBytes - bytes) throw new ExpansionTooLong(maxBytes);
    bytes += Buffer.byteLength(piece);
    if (bytes > maxBytes) throw new ExpansionTooLong(maxBytes);
    out += piece;
  };
  // The first ')' at or after the last search; -1 when there is none left. Searching once per
  // '$(' would make `$($($(…` without a ')' quadratic.
  let close = -2;
  let checkpoint = 0;
  for (let cursor = 0; cursor < input.length; cursor++) {
    if (input[cursor] !== '$' || cursor + 1 >= input.length) continue;
    append(input.slice(checkpoint, cursor));
    const next = input[cursor + 1];
    let end = cursor + 1;
    if (next === '$') {
      append('$');
    } else if (next === '(') {
      if (close !== -1 && close < cursor + 2) close = input.indexOf(')', cursor + 2);
      if (close >= 0) {
        append(mapping(input.slice(cursor + 2, close)));
        end = close;
      } else {
        append('$(');
      }
    } else {
      append(`$${next}`);
    }
    cursor = end;
    checkpoint = cursor + 1;
  }
  append(input.slice(checkpoint));
  return out;
}

/**
 * One container's share of expansion (`MAX_CONTAINER_EXPANSION_BYTES`), spent by its env values,
 * command, args and subpaths in turn. `expand` refuses, with a `ContainerConfigError` naming
 * `what` and the cap, a value that would pass its own cap or what is left of the share; the
 * refusal comes before the oversized text exists, so it costs no more than the cap.
 */
export class ExpansionBudget {
  #left: number;

  constructor(readonly totalBytes: number = MAX_CONTAINER_EXPANSION_BYTES) {
    this.#left = totalBytes;
  }

  /** Counts `value` (not expanded, e.g. read from a configMap) against the share. */
  spend(what: string, value: string): void {
    const size = value.length > this.#left ? Infinity : Buffer.byteLength(value);
    if (size > this.#left) throw this.#refusal(what, 'value', this.totalBytes, 'total');
    this.#left -= size;
  }

  /** `expand(input, mapping)` for `what` (e.g. `env FOO`), at most `maxBytes` and what is left. */
  expand(what: string, input: string, mapping: (name: string) => string, maxBytes: number = MAX_EXPANDED_VALUE_BYTES): string {
    const total = this.#left < maxBytes;
    let out: string;
    try {
      out = expand(input, mapping, total ? this.#left : maxBytes);
    } catch (err) {
      if (err instanceof ExpansionTooLong) throw this.#refusal(what, '$(VAR) expansion', total ? this.totalBytes : maxBytes, total ? 'total' : maxBytes === MAX_SUBPATH_BYTES ? 'path' : 'value');
      throw err;
    }
    this.#left -= Buffer.byteLength(out);
    return out;
  }

  #refusal(what: string, subject: string, cap: number, kind: 'total' | 'path' | 'value'): ContainerConfigError {
    const which = {
      total: "the container's env, command, args and subpaths together",
      path: "PATH_MAX, the kernel's limit on a path",
      value: "MAX_ARG_STRLEN, the kernel's limit on one argument or env string",
    }[kind];
    return new ContainerConfigError(`${what}: ${subject} would exceed ${cap} bytes (${which})`);
  }
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
