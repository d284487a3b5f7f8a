// The 4 KiB object both sides of the storage benchmark send (deterministic bytes).
export const OBJECT_SIZE = 4096;

export function objectBody() {
  const b = Buffer.alloc(OBJECT_SIZE);
  for (let i = 0; i < OBJECT_SIZE; i++) b[i] = (i * 131 + 7) & 0xff;
  return b;
}
