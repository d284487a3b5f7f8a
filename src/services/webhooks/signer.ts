import type { Sealer } from '../../control/seal.js';
import type { WebhookRow } from './store.js';
import { sign } from './wire.js';

/** Standard Webhooks signatures of deliveries, with the webhooks' secrets opened once per sealed value. */
export class Signer {
  readonly #sealer: Sealer;
  /** Opened secrets by project and sealed text. */
  readonly #secrets = new Map<string, string>();

  constructor(sealer: Sealer) {
    this.#sealer = sealer;
  }

  open(projectId: string, id: string, sealed: string, old: boolean): string {
    // note: opening derives the project's key (HKDF) and decrypts: once per sealed value, not per attempt.
    const key = `${projectId}\0${sealed}`;
    let plain = this.#secrets.get(key);
    if (plain === undefined) {
      plain = this.#sealer.open(projectId, 'webhooks', old ? `${id}:old` : id, sealed, () => {});
      if (this.#secrets.size >= 10_000) this.#secrets.clear();
      this.#secrets.set(key, plain);
    }
    return plain;
  }

  /** `<timestamp> <signature header>`: one `v1,` signature per secret in force (the new one first). */
  signature(projectId: string, row: WebhookRow, id: string, payload: string, nowMs: number): string {
    const ts = Math.floor(nowMs / 1000);
    const secrets = [this.open(projectId, row.id, row.secret, false)];
    if (row.old_secret !== null && row.old_secret_until !== null && Date.parse(row.old_secret_until) > nowMs) {
      secrets.push(this.open(projectId, row.id, row.old_secret, true));
    }
    return `${ts} ${secrets.map((s) => `v1,${sign(s, id, ts, payload)}`).join(' ')}`;
  }
}
