import { describe, expect, it } from 'vitest';
import { EdgeError } from '../../src/core/errors.js';
import { pageParams, uploadErrorPage, uploadPage } from '../../src/services/storage/upload-page.js';
import { parseTusMetadata } from '../../src/services/storage/uploads.js';

const page = (over: Partial<Parameters<typeof uploadPage>[0]> = {}) =>
  uploadPage({ base: 'https://edge.example.com', key: 'svc_live_abc', bucket: 'media', prefix: '', accept: '', origin: '*', ...over });

describe('upload page', () => {
  it('is one HTML document with its script and style under a fresh nonce, no referrer, absolute URLs', () => {
    const a = page();
    const b = page();
    const csp = a.headers!['content-security-policy']!;
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)![1]!;
    expect(nonce).not.toBe(/script-src 'nonce-([^']+)'/.exec(b.headers!['content-security-policy']!)![1]);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain('connect-src https://edge.example.com');
    expect(csp).toContain('frame-ancestors *');
    expect(a.headers!['referrer-policy']).toBe('no-referrer');
    expect(a.headers!['content-type']).toBe('text/html; charset=utf-8');
    const body = String(a.bytes);
    expect(body.match(/<script/g)).toHaveLength(1);
    expect(body).toContain(`<script nonce="${nonce}">`);
    expect(body).toContain(`<style nonce="${nonce}">`);
    expect(body).toContain('"base":"https://edge.example.com"');
    expect(body).not.toMatch(/src=|href=/);
  });
  it('keeps values from breaking out of the script or the attribute', () => {
    const body = String(page({ prefix: '</script><script>alert(1)</script>', accept: 'image/*' }).bytes);
    expect(body).not.toContain('</script><script>alert(1)');
    expect(body).toContain('\\u003c/script\\u003e');
    expect(body).toContain('accept="image/*"');
  });
  it('names the embedding origin in frame-ancestors and as the postMessage target', () => {
    const r = page({ origin: 'http://127.0.0.1:5173' });
    expect(r.headers!['content-security-policy']).toContain('frame-ancestors http://127.0.0.1:5173');
    expect(String(r.bytes)).toContain('"origin":"http://127.0.0.1:5173"');
  });
  it('checks its parameters', () => {
    const bad = (s: string) => {
      try {
        pageParams(new URLSearchParams(s));
        return 'ok';
      } catch (err) {
        return (err as EdgeError).code;
      }
    };
    expect(bad('bucket=media')).toBe('ok');
    expect(pageParams(new URLSearchParams('bucket=media&prefix=a/&accept=image/*,.pdf&origin=https://x.example'))).toEqual({
      bucket: 'media',
      prefix: 'a/',
      accept: 'image/*,.pdf',
      origin: 'https://x.example',
    });
    for (const s of ['', 'bucket=A', 'bucket=media&origin=javascript:alert(1)', 'bucket=media&origin=https://x.example/path', 'bucket=media&accept="><x', 'bucket=media&prefix=a%00b']) {
      expect(bad(s), s).toBe('invalid_field');
    }
  });
  it('escapes the error page', () => {
    const r = uploadErrorPage(400, '<b>service key</b>');
    expect(r.status).toBe(400);
    expect(String(r.bytes)).toContain('&#60;b&#62;service key&#60;/b&#62;');
    expect(r.headers!['content-security-policy']).toContain("connect-src 'none'");
  });
});

describe('TUS Upload-Metadata', () => {
  it('decodes base64 values and refuses malformed lists', () => {
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    expect([...parseTusMetadata(`bucket ${b64('media')},key ${b64('a/ü.txt')},empty`)]).toEqual([
      ['bucket', 'media'],
      ['key', 'a/ü.txt'],
      ['empty', ''],
    ]);
    for (const bad of ['bucket a b', 'bucket !!!', ' , ', 'a YQ==,a YQ==']) {
      expect(() => parseTusMetadata(bad), bad).toThrow(EdgeError);
    }
  });
});
