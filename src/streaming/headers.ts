/**
 * Header lines as Node gives them: `req.headersDistinct[name]` (one element per line), a single
 * joined string (`req.headers[name]`, lines joined with `, `), or undefined.
 */
export type HeaderLines = string | readonly string[] | undefined;

/**
 * The one parser of comma-separated header values (`X-Stream-Protocol-Version`,
 * `Sec-WebSocket-Protocol`): apimachinery's `commaSeparatedHeaderValues`
 * (`staging/src/k8s.io/apimachinery/pkg/util/httpstream/httpstream.go`) — every line split on
 * `,`, each piece trimmed, empties dropped — so repeated lines (kubectl) and one comma-joined
 * line (Node's `req.headers`) agree. Pieces are trimmed of HTTP's optional whitespace (spaces and
 * tabs): apimachinery trims spaces, golang.org/x/net/websocket's handshake (the kubelet's
 * `wsstream`) any white space; no client sends anything else around a protocol name.
 */
export function commaSeparatedHeaderValues(lines: HeaderLines): string[] {
  const list = lines === undefined ? [] : typeof lines === 'string' ? [lines] : lines;
  const out: string[] = [];
  for (const line of list) {
    for (const part of line.split(',')) {
      const value = part.replace(/^[ \t]+|[ \t]+$/g, '');
      if (value !== '') out.push(value);
    }
  }
  return out;
}
