// The 4 KiB object both sides of the storage benchmark send (deterministic bytes), or another size.
export const OBJECT_SIZE = 4096;

/** `size` bytes (the 4 KiB object by default; bench/bare-uws-bytes.mjs takes another size for the media benchmark). */
export function objectBody(size = OBJECT_SIZE) {
  const b = Buffer.alloc(size);
  for (let i = 0; i < size; i++) b[i] = (i * 131 + 7) & 0xff;
  return b;
}
