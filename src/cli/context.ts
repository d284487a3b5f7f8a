import { loadConfig, type Config } from '../config.js';
import { ControlStore } from '../control/control-store.js';
import { Operators } from '../control/operators.js';
import { ProjectAdmin } from '../control/project-admin.js';
import { loadMasterKey } from '../control/master-key.js';
import { Sealer } from '../control/seal.js';
import { mkdirSync } from 'node:fs';
import { str, type Io } from './args.js';

/** The control plane opened directly on a data folder (works beside a running `serve`). */
export interface AdminContext {
  config: Config;
  control: ControlStore;
  projects: ProjectAdmin;
  operators: Operators;
  close(): void;
}

export function openAdmin(values: Record<string, unknown>, io: Io): AdminContext {
  const config = loadConfig({ dataDir: str(values['data-dir']) }, io.env);
  mkdirSync(config.dataDir, { recursive: true });
  const control = new ControlStore(config.dataDir, config.durability, new Sealer(loadMasterKey(config.dataDir, config.masterKey)));
  return {
    config,
    control,
    projects: new ProjectAdmin(config, control, null, null, null),
    operators: new Operators(control),
    close: () => control.close(),
  };
}
