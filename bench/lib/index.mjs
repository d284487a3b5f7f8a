// The benchmark library, for scenario files: `import { servers, luaScript, … } from '../lib/index.mjs'`.
export { servers, startServer, rssMb, cpuMs, ServerPool, ROOT } from './server.mjs';
export { runWrk, luaScript, parseWrk, DEFAULTS, requireWrk, wrkVersion } from './wrk.mjs';
export { runScenario, runSection, redact, PAIRS } from './measure.mjs';
export { measureStartup, bareNodeProcess } from './startup.mjs';
export { median } from './stats.mjs';
export { apiCall, oncePerServer } from './setup.mjs';
