import type { Config } from '../config.js';

export interface Geo {
  lat: number | null;
  lon: number | null;
  country: string | null;
}

/** What the pipeline reports about each answered request (live log, public traffic). */
export interface RequestRecord {
  projectId: string | null;
  method: string;
  route: string;
  status: number;
  durationMs: number;
  geo: Geo | null;
}

function firstHeader(headers: Readonly<Record<string, string>>, names: readonly string[]): string | undefined {
  for (const n of names) {
    const v = headers[n];
    if (v !== undefined && v !== '') return v;
  }
  return undefined;
}

/** The visitor's location from the fronting proxy's headers, rounded to 0.1° (about 11 km). */
export function geoOf(config: Config, headers: Readonly<Record<string, string>>, names: readonly string[]): Geo | null {
  // note: most requests carry no geo header; one pass over the names answers those cheaply.
  let any = false;
  for (const n of names) if (headers[n] !== undefined) any = true;
  if (!any) return null;
  const rawLat = firstHeader(headers, config.geoHeaders.lat);
  const rawLon = firstHeader(headers, config.geoHeaders.lon);
  const country = firstHeader(headers, config.geoHeaders.country);
  const lat = Number(rawLat);
  const lon = Number(rawLon);
  const okLat = rawLat !== undefined && Number.isFinite(lat) && Math.abs(lat) <= 90;
  const okLon = rawLon !== undefined && Number.isFinite(lon) && Math.abs(lon) <= 180;
  const okCountry = country !== undefined && /^[A-Za-z]{2}$/.test(country);
  if (!okLat && !okLon && !okCountry) return null;
  const round = (x: number): number => Math.round(x * 10) / 10;
  return {
    lat: okLat && okLon ? round(lat) : null,
    lon: okLat && okLon ? round(lon) : null,
    country: okCountry ? country.toUpperCase() : null,
  };
}
