import { BUSYBOX } from './docker.js';

/**
 * Hostile inputs shared by the regression tests and the soak's hostile-client phase
 * (test/soak/hostile.soak.ts).
 */

/**
 * A static pod whose 22 env entries double each other (`V{i}=$(V{i-1})$(V{i-1})`, V0 of 32
 * characters: 1.4 KB of spec, 64 Mi characters once expanded), used in args and `subPathExpr`.
 */
export function expansionBombManifest(name = 'bomb', entries = 22): string {
  const env = [`        - { name: V0, value: "${'x'.repeat(32)}" }`];
  for (let i = 1; i < entries; i++) env.push(`        - { name: V${i}, value: "$(V${i - 1})$(V${i - 1})" }`);
  const last = `V${entries - 1}`;
  return `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 0
  volumes: [{ name: scratch, emptyDir: {} }]
  containers:
    - name: app
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "sleep 3600"]
      args: ["$(${last})", "$(${last})$(${last})"]
      volumeMounts: [{ name: scratch, mountPath: /scratch, subPathExpr: "a/$(${last})" }]
      env:
${env.join('\n')}
`;
}

export interface Answer {
  status: number;
  head: string;
  body: string;
}

/**
 * The answers in `text`, read one after the other as HTTP/1.1 frames them (Content-Length,
 * chunked, or until the close), up to a `101` (`switched`) after which the bytes are no longer HTTP.
 */
export function httpAnswers(text: string): { list: Answer[]; switched: boolean } {
  const list: Answer[] = [];
  let at = 0;
  while (at < text.length) {
    const end = text.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const head = text.slice(at, end);
    const status = /^HTTP\/1\.1 (\d{3}) /.exec(head);
    if (!status) throw new Error(`not an HTTP answer at byte ${at}: ${JSON.stringify(head.slice(0, 80))}`);
    at = end + 4;
    if (status[1] === '101') {
      list.push({ status: 101, head, body: '' });
      return { list, switched: true };
    }
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    let body = '';
    if (length) {
      if (text.length < at + Number(length[1])) break; // incomplete
      body = text.slice(at, at + Number(length[1]));
      at += Number(length[1]);
    } else if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
      let complete = false;
      for (;;) {
        const line = text.indexOf('\r\n', at);
        if (line < 0) break;
        const size = parseInt(text.slice(at, line), 16);
        if (text.length < line + 2 + size + 2) break;
        body += text.slice(line + 2, line + 2 + size);
        at = line + 2 + size + 2;
        if (size === 0) {
          complete = true;
          break;
        }
      }
      if (!complete) {
        list.push({ status: Number(status[1]), head, body });
        return { list, switched: false };
      }
    } else {
      body = text.slice(at);
      at = text.length;
    }
    list.push({ status: Number(status[1]), head, body });
  }
  return { list, switched: false };
}
