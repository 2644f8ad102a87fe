/**
 * The kubelet's env-file parser for `env[].valueFrom.fileKeyRef` (EnvFiles, on since 1.35;
 * pkg/kubelet/util/env/env_util.go `ParseEnv`), line for line: a strict subset of POSIX shell —
 * `NAME='value'`, single quotes required and taken literally (newlines inside them kept), a
 * comment after the closing quote allowed, leading blanks ignored, blank lines and `#` lines
 * skipped, no blank before `=`; a blank right after `=` assigns the empty string (as bash does
 * for `NAME= 'x'`). Returns the value of `key`, or `''` when the file does not set it (the kubelet
 * cannot tell the two apart either). Throws `EnvFileError` naming the line for a malformed file.
 */
export class EnvFileError extends Error {}

export function parseEnvFile(text: string, key: string): string {
  const lines = text.split('\n');
  // bufio.Scanner drops the newline ending the last line, and a trailing \r of each line is kept.
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const lineNum = i + 1;
    const line = (lines[i] ?? '').replace(/^[ \t]+/, '');
    if (line === '' || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq === -1) throw new EnvFileError(`invalid environment variable format at line ${lineNum}: missing '='`);
    const namePart = line.slice(0, eq);
    const name = namePart.replace(/[ \t]+$/, '');
    if (name === '') throw new EnvFileError(`invalid environment variable format at line ${lineNum}: empty variable name`);
    if (name !== namePart) throw new EnvFileError(`invalid environment variable format at line ${lineNum}: whitespace before '=' is not allowed`);
    const valuePart = line.slice(eq + 1);
    const trimmed = valuePart.replace(/^[ \t]+/, '');
    if (trimmed !== valuePart) {
      if (name === key) return '';
      continue;
    }
    if (!trimmed.startsWith("'")) throw new EnvFileError(`invalid environment variable format at line ${lineNum}: value must be enclosed in single quotes`);
    let value = '';
    let rest = trimmed.slice(1);
    const start = lineNum;
    for (;;) {
      const close = rest.indexOf("'");
      if (close !== -1) {
        value += rest.slice(0, close);
        const after = rest.slice(close + 1).replace(/^[ \t]+/, '');
        if (after !== '' && !after.startsWith('#')) throw new EnvFileError(`invalid environment variable format at line ${i + 1}: unexpected content after closing quote`);
        if (name === key) return value;
        break;
      }
      value += `${rest}\n`;
      i++;
      if (i >= lines.length) throw new EnvFileError(`invalid environment variable format starting at line ${start}: unclosed single quote`);
      rest = lines[i] ?? '';
    }
  }
  return '';
}
