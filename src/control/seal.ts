import { createCipheriv, createDecipheriv, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';

/**
 * What a sealed value is for. Each purpose of each project seals under its own key, so a
 * value sealed for one cannot be opened as another. Closed: add a member for a new consumer.
 */
export type SealPurpose = 'jwt' | 'keys' | 'secrets' | 'webhooks' | 'storage' | 'functions';

const VERSION = 'v2';
/** HKDF salt: fixed, so the same master key always derives the same per-(project, purpose) keys. */
const SALT = Buffer.from('platform-edge seal v2', 'utf8');
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Encrypts values at rest (docs/operations.md, "Sealed values"): AES-256-GCM under a key
 * derived with HKDF-SHA-256 from the master key per (project, purpose), a random 96-bit
 * nonce, and the project id and the record's name as additional data, so a ciphertext
 * copied to another project, purpose or row does not open.
 *
 * Format: `v2.<nonce>.<tag>.<ciphertext>`, each base64url. `v1.<iv>.<tag>.<ciphertext>`
 * (sealed directly under the master key, no additional data: versions before this one)
 * still opens, and `open` hands the caller the value resealed as `v2` to write back.
 */
export class Sealer {
  readonly #master: KeyObject;

  constructor(masterKey: Buffer) {
    if (masterKey.length !== 32) throw new Error('the master key must be 32 bytes');
    this.#master = createSecretKey(masterKey);
  }

  /** The MAC key of one (project, purpose) (`deriveMacKey`): signing, never sealing. */
  macKey(project: string, purpose: SealPurpose): Buffer {
    return deriveMacKey(this.#master, project, purpose);
  }

  seal(project: string, purpose: SealPurpose, name: string, plain: string): string {
    const nonce = randomBytes(NONCE_BYTES);
    const c = createCipheriv('aes-256-gcm', deriveSealKey(this.#master, project, purpose), nonce);
    c.setAAD(aad(project, name));
    const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
    return `${VERSION}.${nonce.toString('base64url')}.${c.getAuthTag().toString('base64url')}.${body.toString('base64url')}`;
  }

  /**
   * The plaintext of a sealed value; throws an Error naming the record when it does not
   * open. A value in an older format is resealed, and `reseal` gets the new form to store in
   * its place (in the same row, under the same project, purpose and name).
   */
  open(project: string, purpose: SealPurpose, name: string, sealed: string, reseal: (current: string) => void): string {
    const what = `the sealed ${purpose} value "${name}" of project ${project}`;
    const parts = sealed.split('.');
    const [version, nonce, tag, body] = parts;
    if (parts.length !== 4 || (version !== VERSION && version !== 'v1') || !nonce || !tag) {
      throw new Error(`${what} has an unknown format`);
    }
    const iv = Buffer.from(nonce, 'base64url');
    const authTag = Buffer.from(tag, 'base64url');
    if (iv.length !== NONCE_BYTES || authTag.length !== TAG_BYTES) throw new Error(`${what} has an unknown format`);
    let plain: string;
    try {
      const d = createDecipheriv('aes-256-gcm', version === 'v1' ? this.#master : deriveSealKey(this.#master, project, purpose), iv);
      if (version !== 'v1') d.setAAD(aad(project, name));
      d.setAuthTag(authTag);
      plain = Buffer.concat([d.update(Buffer.from(body!, 'base64url')), d.final()]).toString('utf8');
    } catch (err) {
      throw new Error(`${what} does not open: it was sealed for another project, purpose or name, altered, or sealed under another master key`, {
        cause: err,
      });
    }
    if (version === 'v1') reseal(this.seal(project, purpose, name, plain));
    return plain;
  }
}

/**
 * A 32-byte MAC key of one (project, purpose), e.g. for signed URLs: HKDF-SHA-256 of the master key
 * with its own info string, so it never equals the sealing key of the same pair.
 */
export function deriveMacKey(master: KeyObject | Buffer, project: string, purpose: SealPurpose): Buffer {
  requireId('project', project);
  const info = Buffer.from(`platform-edge/mac/v1\0${purpose}\0${project}`, 'utf8');
  return Buffer.from(hkdfSync('sha256', master, SALT, info, 32));
}

/** The AES-256 key of one (project, purpose): HKDF-SHA-256 of the master key. */
export function deriveSealKey(master: KeyObject | Buffer, project: string, purpose: SealPurpose): Buffer {
  requireId('project', project);
  const info = Buffer.from(`platform-edge/seal/${VERSION}\0${purpose}\0${project}`, 'utf8');
  return Buffer.from(hkdfSync('sha256', master, SALT, info, 32));
}

/** The additional data: the project id and the record's name, unambiguously joined. */
function aad(project: string, name: string): Buffer {
  requireId('project', project);
  requireId('name', name);
  return Buffer.from(JSON.stringify([project, name]), 'utf8');
}

function requireId(what: string, value: string): void {
  if (value.length === 0) throw new Error(`a sealed value needs a non-empty ${what}`);
}
