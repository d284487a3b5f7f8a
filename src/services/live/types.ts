/** One entry of a project's live log. Never a body, a query string or a header. */
export type LiveEvent =
  | { seq: number; at: string; kind: 'request'; method: string; route: string; status: number; duration_ms: number }
  | { seq: number; at: string; kind: 'change'; label: string };

export interface LiveStats {
  requests: number;
  errors: number;
  client_errors: number;
  changes: number;
  /** Requests per second over the last 10 s. */
  rps: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

export interface EdgeStats {
  version: string;
  backend: string;
  uptime_s: number;
  open_projects: number;
  rss_mb: number;
}

/** A public traffic hit: a time and a rounded location, nothing else. */
export interface TrafficHit {
  seq: number;
  at: string;
  lat: number | null;
  lon: number | null;
  country: string | null;
}
