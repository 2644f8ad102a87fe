import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { AuthnResult, Authenticator, UserInfo } from './types.js';

/** A problem with the token file, reported at start-up; never carries a token. */
export class TokenFileError extends Error {}

/** RFC 4180 records (quoted fields, `""` escapes), as Go's encoding/csv reads them; blank lines skipped. */
export function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  let touched = false;
  const endField = () => {
    record.push(field);
    field = '';
    touched = false;
  };
  const endRecord = () => {
    if (record.length > 0 || touched || field !== '') {
      endField();
      records.push(record);
    }
    record = [];
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field.trim() === '') {
      quoted = true;
      touched = true;
      field = '';
    } else if (c === ',') endField();
    else if (c === '\n') endRecord();
    else if (c === '\r' && text[i + 1] === '\n') continue;
    else if (field === '' && (c === ' ' || c === '\t') && !touched) continue; // TrimLeadingSpace
    else {
      field += c;
      touched = true;
    }
  }
  if (quoted) throw new TokenFileError('unterminated quoted field');
  endRecord();
  return records;
}

const digest = (token: string): string => createHash('sha256').update(token).digest('hex');

/**
 * Static bearer tokens (the apiserver's `--token-auth-file` format: `token,user,uid[,"g1,g2"]`).
 * Tokens are kept only as SHA-256 digests, so a heap dump or an error message never shows one.
 */
export class TokenFileAuthenticator implements Authenticator {
  readonly #users: Map<string, UserInfo>;

  private constructor(users: Map<string, UserInfo>) {
    this.#users = users;
  }

  /** Parses the file's text; `warnings` name record numbers only. */
  static fromText(text: string, warnings: string[] = []): TokenFileAuthenticator {
    const users = new Map<string, UserInfo>();
    parseCsv(text).forEach((rec, i) => {
      const n = i + 1;
      if (rec.length < 3) throw new TokenFileError(`record ${n} must have at least 3 columns (token, user name, user uid), found ${rec.length}`);
      const [token = '', name = '', uid = ''] = rec;
      if (token === '') {
        warnings.push(`empty token in record ${n}, ignored`);
        return;
      }
      if (name === '') throw new TokenFileError(`record ${n} has an empty user name`);
      const key = digest(token);
      if (users.has(key)) warnings.push(`duplicate token in record ${n}; the last one wins`);
      const groups = rec[3] === undefined || rec[3] === '' ? [] : rec[3].split(',').map((g) => g.trim()).filter((g) => g !== '');
      users.set(key, { name, uid, groups });
    });
    return new TokenFileAuthenticator(users);
  }

  /** Tokens given in code (the embedded default's generated admin token); an empty token is refused. */
  static fromEntries(entries: readonly { readonly token: string; readonly user: UserInfo }[]): TokenFileAuthenticator {
    const users = new Map<string, UserInfo>();
    for (const { token, user } of entries) {
      if (token === '') throw new TokenFileError('empty token');
      users.set(digest(token), user);
    }
    return new TokenFileAuthenticator(users);
  }

  static fromFile(path: string, warnings: string[] = []): TokenFileAuthenticator {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      throw new TokenFileError(`cannot read token file ${JSON.stringify(path)}: ${(err as Error).message}`);
    }
    try {
      return TokenFileAuthenticator.fromText(text, warnings);
    } catch (err) {
      throw new TokenFileError(`token file ${JSON.stringify(path)}: ${(err as Error).message}`);
    }
  }

  get size(): number {
    return this.#users.size;
  }

  authenticate(req: IncomingMessage): AuthnResult {
    const token = bearerToken(req.headers.authorization);
    if (token === undefined) return { ok: false };
    const user = this.#users.get(digest(token));
    return user ? { ok: true, user } : { ok: false, error: 'invalid bearer token' };
  }
}

/** `Authorization: Bearer <token>` (scheme case-insensitive), as k8s' bearertoken authenticator reads it. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const parts = header.trim().split(' ');
  if (parts.length < 2 || parts[0]?.toLowerCase() !== 'bearer') return undefined;
  const token = parts[1] ?? '';
  return token === '' ? undefined : token;
}
