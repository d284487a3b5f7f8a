import { randomBytes } from 'node:crypto';
import { EdgeError } from '../../core/errors.js';
import type { EdgeResponse } from '../../edge/route.js';

/** Files above this go up as multipart uploads of this part size (docs/api.md "Upload iframe"). */
export const IFRAME_MULTIPART_ABOVE = 8 * 1024 * 1024;

/** What the page needs to upload: everything absolute or literal, nothing read from its own URL. */
export interface UploadPageInput {
  /** The server's absolute base URL (`--public-url`, else the request's scheme and Host). */
  readonly base: string;
  readonly key: string;
  readonly bucket: string;
  readonly prefix: string;
  /** The file input's `accept` (e.g. `image/*`), or ''. */
  readonly accept: string;
  /** Where the result is posted (`postMessage` target origin); '*' when none was named. */
  readonly origin: string;
}

const ORIGIN = /^https?:\/\/[A-Za-z0-9.-]+(:[0-9]{1,5})?$|^https?:\/\/\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$/;
const ACCEPT = /^[A-Za-z0-9.+*/,\s-]{0,200}$/;

/** Checks the page's query (`bucket`, `prefix`, `accept`, `origin`); the key is judged by the route. */
export function pageParams(q: URLSearchParams): { bucket: string; prefix: string; accept: string; origin: string } {
  const bucket = q.get('bucket') ?? '';
  if (!/^[a-z0-9][a-z0-9_-]{1,62}$/.test(bucket)) throw new EdgeError('invalid_field', 'bucket: must name a bucket');
  const prefix = q.get('prefix') ?? '';
  if (Buffer.byteLength(prefix) > 512 || /[\u0000-\u001f\u007f\\]/.test(prefix)) throw new EdgeError('invalid_field', 'prefix: at most 512 bytes, no control characters or backslash');
  const accept = q.get('accept') ?? '';
  if (!ACCEPT.test(accept)) throw new EdgeError('invalid_field', 'accept: must be a list of media types or extensions');
  const origin = q.get('origin') ?? '*';
  if (origin !== '*' && !ORIGIN.test(origin)) throw new EdgeError('invalid_field', 'origin: must be an origin such as https://app.example.com');
  return { bucket, prefix, accept, origin };
}

/** A value placed inside an inline script: JSON with `<`, `>`, `&` and line separators escaped (no `</script>` break-out). */
const js = (v: unknown): string =>
  JSON.stringify(v)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');

const html = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function headers(nonce: string, input: { base: string; origin: string } | null): Record<string, string> {
  const connect = input === null ? "'none'" : input.base;
  const ancestors = input === null || input.origin === '*' ? '*' : input.origin;
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src ${connect}; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors ${ancestors}`,
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
  };
}

/** The error page (400 for a service-role key or a bad parameter, 401 for a missing or invalid key). */
export function uploadErrorPage(status: number, message: string): EdgeResponse {
  const nonce = randomBytes(16).toString('base64');
  const body = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer"><title>Upload unavailable</title><style nonce="${nonce}">body{font:14px system-ui,sans-serif;margin:12px;color:#a00}</style></head><body><p id="error">${html(message)}</p></body></html>`;
  return { status, headers: headers(nonce, null), bytes: body };
}

/** The upload page: one self-contained HTML document whose inline script and style run under a fresh nonce. */
export function uploadPage(input: UploadPageInput): EdgeResponse {
  const nonce = randomBytes(16).toString('base64');
  const cfg = {
    base: input.base,
    key: input.key,
    bucket: input.bucket,
    prefix: input.prefix,
    origin: input.origin,
    multipartAbove: IFRAME_MULTIPART_ABOVE,
    partSize: IFRAME_MULTIPART_ABOVE,
  };
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>Upload</title>
<style nonce="${nonce}">
body{font:14px system-ui,sans-serif;margin:8px}
progress{width:100%;height:12px}
#status{margin-top:6px;min-height:1.2em}
#status.error{color:#a00}
</style></head>
<body>
<input id="file" type="file"${input.accept === '' ? '' : ` accept="${html(input.accept)}"`}>
<progress id="progress" max="1" value="0"></progress>
<div id="status" role="status"></div>
<script nonce="${nonce}">
(function () {
  'use strict';
  var C = ${js(cfg)};
  var input = document.getElementById('file');
  var bar = document.getElementById('progress');
  var status = document.getElementById('status');
  function say(text, isError) { status.textContent = text; status.className = isError ? 'error' : ''; }
  function keyPath(key) { return key.split('/').map(encodeURIComponent).join('/'); }
  function post(msg) { if (window.parent !== window) window.parent.postMessage(msg, C.origin); }
  function request(method, url, body, contentType, onProgress) {
    return new Promise(function (resolve, reject) {
      var x = new XMLHttpRequest();
      x.open(method, url);
      x.setRequestHeader('X-Service-Key', C.key);
      if (contentType) x.setRequestHeader('Content-Type', contentType);
      if (onProgress) x.upload.onprogress = function (e) { onProgress(e.loaded); };
      x.onload = function () {
        var data = null;
        try { data = x.responseText ? JSON.parse(x.responseText) : null; } catch (e) { data = null; }
        if (x.status >= 200 && x.status < 300) resolve(data);
        else reject({ status: x.status, code: data && data.error ? data.error.code : 'http_' + x.status, message: data && data.error ? data.error.message : 'upload failed' });
      };
      x.onerror = function () { reject({ status: 0, code: 'network_error', message: 'the upload could not reach the server' }); };
      x.send(body);
    });
  }
  function single(file, key, type) {
    return request('PUT', C.base + '/storage/objects/' + encodeURIComponent(C.bucket) + '/' + keyPath(key), file, type, function (n) { bar.value = n / Math.max(1, file.size); });
  }
  function multipart(file, key, type) {
    return request('POST', C.base + '/storage/multipart', JSON.stringify({ bucket: C.bucket, key: key, content_type: type, part_size: C.partSize }), 'application/json').then(function (up) {
      var parts = Math.ceil(file.size / up.part_size);
      var done = 0;
      function next(i) {
        if (i > parts) return request('POST', C.base + '/storage/multipart/' + up.upload_id + '/complete', null, null);
        var blob = file.slice((i - 1) * up.part_size, Math.min(file.size, i * up.part_size));
        return request('PUT', C.base + '/storage/multipart/' + up.upload_id + '/' + i, blob, 'application/octet-stream', function (n) { bar.value = (done + n) / file.size; })
          .then(function () { done += blob.size; return next(i + 1); });
      }
      return next(1).catch(function (err) {
        request('DELETE', C.base + '/storage/multipart/' + up.upload_id, null, null).catch(function () {});
        throw err;
      });
    });
  }
  input.addEventListener('change', function () {
    var file = input.files && input.files[0];
    if (!file) return;
    var key = C.prefix + file.name;
    var type = file.type || 'application/octet-stream';
    input.disabled = true;
    bar.value = 0;
    say('Uploading ' + file.name + '...', false);
    (file.size > C.multipartAbove ? multipart(file, key, type) : single(file, key, type)).then(function (r) {
      bar.value = 1;
      say('Uploaded ' + file.name, false);
      post({ type: 'platform-edge:uploaded', id: r.id, bucket: r.bucket, key: r.key, size: r.size, content_type: r.content_type, url: r.url });
    }, function (err) {
      say(err.message, true);
      post({ type: 'platform-edge:upload-error', status: err.status, code: err.code, message: err.message });
    }).then(function () { input.disabled = false; input.value = ''; });
  });
})();
</script>
</body></html>
`;
  return { status: 200, headers: headers(nonce, input), bytes: body };
}
