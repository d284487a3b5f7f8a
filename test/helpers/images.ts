import { crc32 } from 'node:zlib';
import sharp from 'sharp';

/** A small generated image (a gradient-free colour block with a stripe, so resizes are visible). */
export async function makeImage(width: number, height: number, format: 'jpeg' | 'png' | 'webp' | 'gif' = 'png'): Promise<Buffer> {
  const img = sharp({ create: { width, height, channels: 3, background: { r: 200, g: 30, b: 60 } } });
  return img.toFormat(format).toBuffer();
}

function chunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td) >>> 0);
  return Buffer.concat([len, td, crc]);
}

/** A PNG whose header claims `side` x `side` pixels, with a few bytes of (truncated) data: a decompression bomb's shape. */
export function pngBomb(side = 14000): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(side, 0);
  ihdr.writeUInt32BE(side, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', Buffer.from([0x78, 0x9c, 0x63, 0x00, 0x00])),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A GIF of `frames` one-pixel frames on a `screen` x `screen` canvas: every frame decodes to the whole canvas. */
export function gifBomb(frames = 10_000, screen = 100): Buffer {
  const head = Buffer.alloc(13 + 6);
  head.write('GIF89a', 0, 'ascii');
  head.writeUInt16LE(screen, 6);
  head.writeUInt16LE(screen, 8);
  head[10] = 0x80; // a global colour table of 2 entries
  head.set([0, 0, 0, 255, 255, 255], 13);
  const frame = Buffer.from([
    0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0x00, // image descriptor: 1x1 at 0,0
    0x02, 0x02, 0x44, 0x01, 0x00, // LZW min code 2; clear, 0, end
  ]);
  const parts: Buffer[] = [head];
  for (let i = 0; i < frames; i++) parts.push(frame);
  parts.push(Buffer.from([0x3b]));
  return Buffer.concat(parts);
}
