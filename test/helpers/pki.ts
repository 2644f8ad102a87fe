import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A CA and certificates made with the system's openssl, in a temp directory removed at teardown. */
export interface Pki {
  readonly dir: string;
  /** A CA: its cert and key paths. */
  ca(name: string): { cert: string; key: string };
  /** A client (or server) certificate signed by `ca`; `days` < 0 makes an expired one. */
  issue(ca: { cert: string; key: string }, name: string, subject: string, opts?: { days?: number; serverIP?: string }): { cert: string; key: string };
  read(path: string): Buffer;
}

export function makePki(t: { teardown(fn: () => void): void }): Pki {
  const dir = mkdtempSync(join(tmpdir(), 'nodelet-pki-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  return {
    dir,
    ca(name) {
      const cert = join(dir, `${name}.crt`);
      const key = join(dir, `${name}.key`);
      ssl('req', '-x509', '-nodes', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-days', '2', '-subj', `/CN=${name}`,
        '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-keyout', key, '-out', cert);
      return { cert, key };
    },
    issue(ca, name, subject, opts = {}) {
      const cert = join(dir, `${name}.crt`);
      const key = join(dir, `${name}.key`);
      const csr = join(dir, `${name}.csr`);
      ssl('req', '-new', '-nodes', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-subj', subject, '-keyout', key, '-out', csr);
      const ext = join(dir, `${name}.ext`);
      const lines = opts.serverIP ? [`subjectAltName=IP:${opts.serverIP}`, 'extendedKeyUsage=serverAuth'] : ['extendedKeyUsage=clientAuth'];
      execFileSync('sh', ['-c', `printf '%s\\n' ${lines.map((l) => `'${l}'`).join(' ')} > '${ext}'`]);
      // `-days -1` puts notAfter in the past: an expired certificate without faking the clock.
      ssl('x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', cert, '-extfile', ext, '-days', String(opts.days ?? 2));
      return { cert, key };
    },
    read: (path) => readFileSync(path),
  };
}
