import { TLSSocket } from 'node:tls';
import type { IncomingMessage } from 'node:http';
import type { AuthnResult, Authenticator } from './types.js';

const CLIENT_AUTH_OID = '1.3.6.1.5.5.7.3.2';
const ANY_EKU_OID = '2.5.29.37.0';

/** Node gives one string, or an array when the subject repeats an attribute (several O=). */
function values(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).filter((s) => s !== '');
}

/**
 * Client certificates verified against `--client-ca-file`: user = CN, groups = O, as the
 * apiserver's x509 authenticator (CommonNameUserConversion). The TLS server only *requests* a
 * certificate (`requestCert`, `rejectUnauthorized: false`, the kubelet's RequestClientCert), so a
 * bearer token still works on the same port; an unverified certificate is an error (401), never
 * a fall-through to anonymous.
 */
export class X509Authenticator implements Authenticator {
  authenticate(req: IncomingMessage): AuthnResult {
    const socket = req.socket;
    if (!(socket instanceof TLSSocket)) return { ok: false };
    const cert = socket.getPeerCertificate();
    if (cert === null || typeof cert !== 'object' || Object.keys(cert).length === 0) return { ok: false };
    if (!socket.authorized) return { ok: false, error: `x509: ${String(socket.authorizationError ?? 'certificate not verified')}` };
    // Go's x509 verification asks for ExtKeyUsageClientAuth; a certificate without EKUs allows any.
    const eku = cert.ext_key_usage;
    if (Array.isArray(eku) && eku.length > 0 && !eku.includes(CLIENT_AUTH_OID) && !eku.includes(ANY_EKU_OID)) {
      return { ok: false, error: 'x509: certificate specifies an incompatible key usage' };
    }
    const subject = cert.subject as unknown as Record<string, string | string[] | undefined> | undefined;
    const [name] = values(subject?.CN);
    if (name === undefined) return { ok: false, error: 'x509: certificate has no CommonName' };
    return { ok: true, user: { name, uid: '', groups: values(subject?.O) } };
  }
}
