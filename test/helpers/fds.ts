import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

/**
 * This process's open file descriptors, fd number → what it refers to (`socket:[inode]`,
 * `pipe:[inode]`, a path…). A descriptor closed between the listing and its readlink is left out.
 */
export function openFds(): Map<number, string> {
  const fds = new Map<number, string>();
  for (const name of readdirSync('/proc/self/fd')) {
    try {
      fds.set(Number(name), readlinkSync(`/proc/self/fd/${name}`));
    } catch {
      /* closed meanwhile (the directory listing's own descriptor among them) */
    }
  }
  return fds;
}

/** The rows of /proc/net/tcp and tcp6 (fields: sl, local, remote, state, …, inode at 9), header skipped. */
function tcpRows(): string[][] {
  const rows: string[][] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length >= 10) rows.push(f);
    }
  }
  return rows;
}

const portOf = (hex: string) => parseInt(hex.split(':')[1] ?? '0', 16);

/** Socket inode → a readable description, from /proc/net/{tcp,tcp6,unix}. */
function socketTable(): Map<string, string> {
  const table = new Map<string, string>();
  // local, remote, state (01 ESTABLISHED, 08 CLOSE_WAIT, 0A LISTEN…), inode.
  for (const f of tcpRows()) table.set(f[9]!, `tcp :${portOf(f[1]!)} → :${portOf(f[2]!)} state ${f[3]}`);
  try {
    for (const line of readFileSync('/proc/net/unix', 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 7) continue;
      table.set(f[6]!, `unix ${f[7] ?? '(unnamed: a client end, e.g. of the engine socket)'}`);
    }
  } catch {
    /* no unix table */
  }
  return table;
}

/**
 * The descriptors open now that were not open (with the same target) in `baseline`, described:
 * for sockets, the protocol and ports or path, so a failure says what stayed open.
 */
export function fdsSince(baseline: Map<number, string>): string[] {
  const now = openFds();
  const table = socketTable();
  const extra: string[] = [];
  for (const [fd, target] of now) {
    if (baseline.get(fd) === target) continue;
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    extra.push(`fd ${fd} ${target}${inode ? ` (${table.get(inode) ?? 'not in /proc/net: another family'})` : ''}`);
  }
  return extra;
}

/**
 * How many of this process's TCP sockets have `port` at either end and are not listening: with an
 * in-process server on `port`, both the client and the server end of each connection to it.
 */
export function tcpConnectionsOn(port: number): number {
  const ours = new Set<string>();
  for (const target of openFds().values()) {
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) ours.add(inode);
  }
  let n = 0;
  for (const f of tcpRows()) {
    if (f[3] === '0A' || !ours.has(f[9]!)) continue;
    if (portOf(f[1]!) === port || portOf(f[2]!) === port) n++;
  }
  return n;
}
