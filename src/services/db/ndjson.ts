import { EdgeError } from '../../core/errors.js';

/**
 * Splits a byte stream into lines (`\n`; a `\r` before it is dropped), decoding UTF-8 strictly.
 * A line longer than `maxLine` characters is 413 `payload_too_large`, before it is all held.
 */
export async function* lines(source: AsyncIterable<Uint8Array>, maxLine: number): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let rest = '';
  const decode = (chunk?: Uint8Array): string => {
    try {
      return chunk === undefined ? decoder.decode() : decoder.decode(chunk, { stream: true });
    } catch {
      throw new EdgeError('invalid_body', 'the body is not valid UTF-8');
    }
  };
  for await (const chunk of source) {
    const text = rest + decode(chunk);
    let start = 0;
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
      yield text.slice(start, nl > start && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl);
      start = nl + 1;
    }
    rest = text.slice(start);
    if (rest.length > maxLine) throw new EdgeError('payload_too_large', `a line exceeds the limit of ${maxLine} characters`);
  }
  rest += decode();
  if (rest !== '') yield rest.endsWith('\r') ? rest.slice(0, -1) : rest;
}
