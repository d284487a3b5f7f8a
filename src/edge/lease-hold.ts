import type { ProjectLease } from '../project/registry.js';
import type { EdgeResponse, WsHandlers } from './route.js';

/** Keeps the project lease until an SSE stream closes (so the file is not closed under a live stream, src/project/registry.ts). */
export function holdLease(res: EdgeResponse, lease: ProjectLease): EdgeResponse {
  const source = res.sse!;
  return {
    ...res,
    sse: (ch) => {
      const cleanup = source(ch);
      return () => {
        try {
          cleanup?.();
        } finally {
          lease.release();
        }
      };
    },
  };
}

/** Keeps the project lease until the socket closes, or the upgrade is abandoned. */
export function holdLeaseWs(ws: WsHandlers, lease: ProjectLease): WsHandlers {
  let held = true;
  const release = (): void => {
    if (held) lease.release();
    held = false;
  };
  return {
    open: ws.open?.bind(ws),
    message: ws.message?.bind(ws),
    drain: ws.drain?.bind(ws),
    close: (sock, code, reason) => {
      try {
        ws.close?.(sock, code, reason);
      } finally {
        release();
      }
    },
    abort: () => {
      try {
        ws.abort?.();
      } finally {
        release();
      }
    },
  };
}
