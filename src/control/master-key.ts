import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

/**
 * Reads the 32-byte master key from config, or from `<dataDir>/master.key`,
 * creating that file (mode 0600) on first use. Only the Sealer (control/seal.ts) uses it.
 */
export function loadMasterKey(dataDir: string, configured: string | null): Buffer {
  if (configured) {
    const key = /^[0-9a-f]{64}$/i.test(configured) ? Buffer.from(configured, 'hex') : Buffer.from(configured, 'base64');
    if (key.length !== 32) throw new Error('PLATFORM_EDGE_MASTER_KEY must be 32 bytes (64 hex characters or base64)');
    return key;
  }
  const file = join(dataDir, 'master.key');
  if (!existsSync(file)) {
    try {
      writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
    } catch (err) {
      // note: another process (a CLI command beside `serve`) may have created it first.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  chmodSync(file, 0o600);
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
}
