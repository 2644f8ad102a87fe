import { X509Certificate, createPrivateKey, webcrypto } from 'node:crypto';
import { mkdtemp, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import * as x509 from '@peculiar/x509';
import type { CertificateSigningRequest } from 'kubernetes-types/certificates/v1.js';
import { ApiError } from '../../../src/apiserver/client.js';
import { CLIENT_SIGNER, CLIENT_USAGES, newKeyAndRequest, nodeTemplate } from '../../../src/certificate/csr.js';
import { CertificateManager } from '../../../src/certificate/manager.js';
import { requestCertificate, type CsrClient } from '../../../src/certificate/request.js';
import { CertificateStore, type CertificatePair } from '../../../src/certificate/store.js';
import { createLogger } from '../../../src/logging/index.js';
import { certificateAuthority, type CertificateAndKey } from '../../../src/server/tls.js';

const log = createLogger({ verbosity: 0, format: 'json', destination: { write: () => undefined } as never });
const crypto = webcrypto as unknown as Crypto;
const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const fast = { initial: 5, max: 20 };

/** Signs a CSR's public key with `ca` for `validityMs` (negative: expired that long ago), as the controller-manager's signer would. */
async function sign(ca: CertificateAndKey, csr: CertificateSigningRequest, validityMs: number): Promise<string> {
  const request = new x509.Pkcs10CertificateRequest(Buffer.from(csr.spec.request, 'base64').toString());
  const caCert = new x509.X509Certificate(ca.cert);
  const caKey = await webcrypto.subtle.importKey('pkcs8', createPrivateKey(ca.key).export({ type: 'pkcs8', format: 'der' }), alg, false, ['sign']);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.create(
    { serialNumber: now.toString(16), subject: request.subjectName, issuer: caCert.subjectName, notBefore: new Date(now - 1000 - (validityMs < 0 ? 3600_000 : 0)), notAfter: new Date(now + validityMs), publicKey: await request.publicKey.export(alg, ['verify'], crypto), signingKey: caKey, signingAlgorithm: alg },
    crypto,
  );
  return cert.toString('pem') + '\n';
}

/**
 * An apiserver of CSRs in memory: POST creates (409 for a taken name), GET reads; `answer` decides
 * each CSR's fate after `polls` reads (approve and sign, deny, delete).
 */
function fakeApiserver(ca: CertificateAndKey, o: { polls?: number; answer?: 'issue' | 'deny' | 'delete' | 'never'; validityMs?: number } = {}) {
  const store = new Map<string, CertificateSigningRequest & { reads: number }>();
  let n = 0;
  const client: CsrClient = {
    async request<T>(method: string, path: string, opts: { body?: unknown } = {}): Promise<T> {
      if (method === 'POST') {
        const body = opts.body as CertificateSigningRequest;
        const name = body.metadata?.name ?? `csr-${++n}`;
        if (store.has(name)) throw new ApiError(409, 'AlreadyExists', 'exists');
        const created = { ...body, metadata: { name, uid: `uid-${name}` }, reads: 0 };
        store.set(name, created);
        return structuredClone(created) as T;
      }
      const name = decodeURIComponent(path.split('/').pop() ?? '');
      const csr = store.get(name);
      if (!csr) throw new ApiError(404, 'NotFound', 'not found');
      csr.reads++;
      if (csr.reads >= (o.polls ?? 2) && !csr.status) {
        const answer = o.answer ?? 'issue';
        if (answer === 'deny') csr.status = { conditions: [{ type: 'Denied', status: 'True', reason: 'NotMine', message: 'no' }] };
        if (answer === 'delete') store.delete(name);
        if (answer === 'issue') csr.status = { conditions: [{ type: 'Approved', status: 'True', reason: 'AutoApproved' }], certificate: Buffer.from(await sign(ca, csr, o.validityMs ?? 3600_000)).toString('base64') };
        if (answer === 'delete') throw new ApiError(404, 'NotFound', 'not found');
      }
      return structuredClone(csr) as T;
    },
  };
  return { client, store };
}

const ca = await certificateAuthority('cp');

t.test('requestCertificate: created, polled with back-off until approved and signed', async (t) => {
  const { client, store } = fakeApiserver(ca, { polls: 3 });
  const { requestPem } = await newKeyAndRequest(nodeTemplate('n1'));
  const pem = await requestCertificate({ client, requestPem, signerName: CLIENT_SIGNER, usages: CLIENT_USAGES, timeoutMs: 5_000, log, pollMs: fast });
  const cert = new X509Certificate(pem);
  t.equal(cert.subject, 'O=system:nodes\nCN=system:node:n1');
  const [csr] = [...store.values()];
  t.equal(csr?.metadata?.name, 'csr-1', 'generateName when no name is given');
  t.equal(csr?.reads, 3, 'read until issued');
});

t.test('requestCertificate: denied, deleted, timed out', async (t) => {
  const { requestPem } = await newKeyAndRequest(nodeTemplate('n1'));
  const base = { requestPem, signerName: CLIENT_SIGNER, usages: CLIENT_USAGES, log, pollMs: fast };
  await t.rejects(requestCertificate({ ...base, client: fakeApiserver(ca, { answer: 'deny' }).client, timeoutMs: 5_000 }), /denied, reason: NotMine, message: no/);
  await t.rejects(requestCertificate({ ...base, client: fakeApiserver(ca, { answer: 'delete' }).client, timeoutMs: 5_000 }), /was deleted/);
  await t.rejects(requestCertificate({ ...base, client: fakeApiserver(ca, { answer: 'never' }).client, timeoutMs: 100 }), /timed out waiting for certificate signing request csr-1/);
  const aborted = new AbortController();
  aborted.abort();
  await t.rejects(requestCertificate({ ...base, client: fakeApiserver(ca, { answer: 'never' }).client, timeoutMs: 5_000, signal: aborted.signal }), /stopped waiting/);
});

t.test('requestCertificate: a named CSR that exists is waited on when made with the same key, refused otherwise', async (t) => {
  const { client } = fakeApiserver(ca, { polls: 1 });
  const mine = await newKeyAndRequest(nodeTemplate('n1'));
  const again = await newKeyAndRequest(nodeTemplate('n1'), mine.keyPem);
  const other = await newKeyAndRequest(nodeTemplate('n1'));
  const base = { client, signerName: CLIENT_SIGNER, usages: CLIENT_USAGES, timeoutMs: 5_000, log, pollMs: fast, name: 'node-csr-x' };
  await requestCertificate({ ...base, requestPem: mine.requestPem, publicKeyDer: mine.publicKeyDer });
  const pem = await requestCertificate({ ...base, requestPem: again.requestPem, publicKeyDer: again.publicKeyDer });
  t.ok(new X509Certificate(pem).publicKey.export({ type: 'spki', format: 'der' }).equals(mine.publicKeyDer), 'the existing CSR\'s certificate, for the same key');
  await t.rejects(requestCertificate({ ...base, requestPem: other.requestPem, publicKeyDer: other.publicKeyDer }), /already exists with a different request/);
});

t.test('CertificateManager: no certificate → requested at once; each new one stored, then handed over; renewed at its deadline', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-manager-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { client, store: csrs } = fakeApiserver(ca, { polls: 1 });
  const rotated: CertificatePair[] = [];
  const store = new CertificateStore(dir, 'kubelet-client');
  const manager = new CertificateManager({ kind: 'client', store, template: () => nodeTemplate('n1'), signerName: CLIENT_SIGNER, usages: CLIENT_USAGES, client: () => client, onRotated: (p) => rotated.push(p), log, rotateAfterMs: 300, pollMs: fast });
  t.teardown(() => manager.stop());
  t.equal(await manager.load(), undefined, 'nothing stored');
  manager.start();
  const deadline = Date.now() + 10_000;
  while (rotated.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await manager.stop();
  t.ok(rotated.length >= 2, 'issued at once, then renewed (test timing: 300 ms after issue)');
  t.not(rotated[0]?.serial, rotated[1]?.serial);
  t.equal(manager.current()?.serial, rotated[rotated.length - 1]?.serial);
  t.equal((await store.current())?.serial, manager.current()?.serial, 'the store holds the current one');
  t.match(await readlink(store.currentPath), /kubelet-client-\d{4}(-\d{2}){5}\.pem$/);
  t.equal(csrs.size, rotated.length, 'one CSR per certificate');
  const keys = new Set(rotated.map((p) => p.keyPem));
  t.equal(keys.size, rotated.length, 'a new key each time');
});

t.test('CertificateManager: a valid stored certificate is kept until its deadline; an expired one is replaced at once', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-manager-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const store = new CertificateStore(dir, 'kubelet-client');
  const { client } = fakeApiserver(ca, { polls: 1, validityMs: 3600_000 });
  const { keyPem, requestPem } = await newKeyAndRequest(nodeTemplate('n1'));
  const valid = await store.update(await sign(ca, { spec: { request: Buffer.from(requestPem).toString('base64'), signerName: CLIENT_SIGNER } }, 3600_000), keyPem);
  const rotated: CertificatePair[] = [];
  const manager = new CertificateManager({ kind: 'client', store, template: () => nodeTemplate('n1'), signerName: CLIENT_SIGNER, usages: CLIENT_USAGES, client: () => client, onRotated: (p) => rotated.push(p), log, pollMs: fast });
  t.teardown(() => manager.stop());
  t.equal((await manager.load())?.serial, valid.serial);
  manager.start();
  const at = manager.rotationDeadline?.getTime() ?? 0;
  t.ok(at >= valid.notBefore.getTime() + 0.7 * 3601_000 - 1000 && at <= valid.notBefore.getTime() + 0.9 * 3601_000 + 1000, 'deadline at 70–90 % of the validity');
  t.equal(rotated.length, 0, 'nothing requested before it');
  await manager.stop();

  const short = await newKeyAndRequest(nodeTemplate('n1'));
  await store.update(await sign(ca, { spec: { request: Buffer.from(short.requestPem).toString('base64'), signerName: CLIENT_SIGNER } }, -60_000), short.keyPem);
  const expired = new CertificateManager({ kind: 'client', store, template: () => nodeTemplate('n1'), signerName: CLIENT_SIGNER, usages: CLIENT_USAGES, client: () => client, onRotated: (p) => rotated.push(p), log, pollMs: fast });
  t.teardown(() => expired.stop());
  t.equal(await expired.load(), undefined, 'an expired stored certificate is not used');
  expired.start();
  const deadline = Date.now() + 5_000;
  while (rotated.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  t.equal(rotated.length, 1, 'a new one requested at once');
});
