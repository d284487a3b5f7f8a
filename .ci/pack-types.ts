// Type-checked by .ci/pack-check in a folder where the packed package is installed: the
// types a user gets with `import { startEdge } from 'platform-edge'` are there and are not `any`.
import { startEdge, type Edge, type StartEdgeOptions } from 'platform-edge';

const options: StartEdgeOptions = { ephemeral: true, port: 0, host: '127.0.0.1', http: 'node' };
const edge: Edge = await startEdge(options);
const url: string = edge.url;
const keys: { publishable: string; service: string } = edge.keys;
const backend: 'uws' | 'node' = edge.http;
const closed: Promise<void> = edge.close();
// @ts-expect-error an HTTP backend that does not exist
void startEdge({ http: 'express' });
// @ts-expect-error an option that does not exist
void startEdge({ prot: 8787 });
// @ts-expect-error the keys are read-only
edge.keys.service = 'x';
export { url, keys, backend, closed };
