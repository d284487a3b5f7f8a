import type { WsSocket } from '../edge/route.js';

/** Close codes the backends send (RFC 6455 §7.4.1; docs/api.md "WebSocket"). */
export const WS_GOING_AWAY = 1001;
export const WS_TOO_BIG = 1009;
export const WS_INTERNAL = 1011;

/** Runs a route's socket handler; a throw closes that socket with 1011, never the server. */
export function guard(sock: WsSocket, fn: () => void): void {
  try {
    fn();
  } catch {
    sock.close(WS_INTERNAL, 'internal error');
  }
}
