import type { Config } from '../config.js';
import { EdgeError, invalidBody, payloadTooLarge } from '../core/errors.js';
import type { EdgeRequest } from './route.js';

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Decodes a JSON request body strictly: the size limit (already enforced while
 * reading), the media type, UTF-8 validity, a nesting-depth cap and, unless the
 * route accepts any value, an object at the top. Empty body → `{}`.
 */
export function parseJsonBody(req: EdgeRequest, config: Config, any = false): unknown {
  if (req.bodyTooLarge) throw payloadTooLarge(config.maxJsonBody);
  const body = req.body;
  if (body === null || body.length === 0) return any ? undefined : {};
  const type = req.headers['content-type'];
  if (type !== undefined && !isJsonType(type)) {
    throw new EdgeError('unsupported_media_type', 'request body must be application/json');
  }
  let text: string;
  try {
    text = decoder.decode(body);
  } catch {
    throw new EdgeError('invalid_body', 'request body is not valid UTF-8');
  }
  if (tooDeep(text, config.maxJsonDepth)) {
    throw new EdgeError('invalid_body', `request body nests deeper than ${config.maxJsonDepth} levels`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new EdgeError('invalid_body', 'request body is not valid JSON');
  }
  if (!any && (value === null || typeof value !== 'object' || Array.isArray(value))) {
    throw invalidBody('request body must be a JSON object');
  }
  return value;
}

// note: clients send the same few content types; the last answer is kept (a regex per body otherwise).
let lastType = '';
let lastJson = false;
function isJsonType(type: string): boolean {
  if (type !== lastType) {
    lastJson = /^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i.test(type);
    lastType = type;
  }
  return lastJson;
}

/** Scans brackets outside strings; cheaper than a recursive walk and safe from stack overflow. */
function tooDeep(text: string, max: number): boolean {
  // note: nesting deeper than max needs more than max opening brackets; most bodies have a few,
  // and counting them with indexOf is much cheaper than the character scan below.
  let opening = 0;
  for (let i = text.indexOf('{'); i !== -1 && opening <= max; i = text.indexOf('{', i + 1)) opening++;
  for (let i = text.indexOf('['); i !== -1 && opening <= max; i = text.indexOf('[', i + 1)) opening++;
  if (opening <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > max) return true;
    } else if (c === 125 || c === 93) depth--;
  }
  return false;
}

/** One JSON object from text already decoded (a line of an NDJSON body), with the same depth cap; `what` names it in errors. */
export function parseJsonObject(text: string, maxDepth: number, what: string): Record<string, unknown> {
  if (tooDeep(text, maxDepth)) throw new EdgeError('invalid_body', `${what} nests deeper than ${maxDepth} levels`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new EdgeError('invalid_body', `${what} is not valid JSON`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalidBody(`${what} must be a JSON object`);
  return value as Record<string, unknown>;
}
