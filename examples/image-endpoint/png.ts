// A minimal PNG encoder (8-bit RGB, no interlace): signature, IHDR, one IDAT of deflated scanlines, IEND.
// Enough for pictures a worker draws itself; node:zlib does the deflate, the CRC-32 is computed here.
import { deflateSync } from "node:zlib";

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** CRC-32 (ISO 3309, the polynomial PNG uses), table-driven. */
const CRC_TABLE = Uint32Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const byte of bytes) c = (CRC_TABLE[(c ^ byte) & 0xff] ?? 0) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** One chunk: length, type, data, CRC over type and data. */
function chunk(type: string, data: Uint8Array): Buffer {
  const typeAndData = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const out = Buffer.alloc(8 + data.length + 4);
  out.writeUInt32BE(data.length, 0);
  typeAndData.copy(out, 4);
  out.writeUInt32BE(crc32(typeAndData), 8 + data.length);
  return out;
}

/** An RGB picture: `pixels` holds width × height × 3 bytes, row by row. */
export interface RgbImage {
  width: number;
  height: number;
  pixels: Uint8Array;
}

export function encodePng({ width, height, pixels }: RgbImage): Buffer {
  if (pixels.length !== width * height * 3) {
    throw new RangeError(
      `pixels has ${pixels.length} bytes; ${width}×${height} RGB needs ${width * height * 3}`,
    );
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: truecolour (RGB)
  // compression, filter method and interlace stay 0: deflate, adaptive filtering, no interlace
  const stride = width * 3;
  const scanlines = Buffer.alloc((stride + 1) * height);
  for (let y = 0; y < height; y++) {
    // Filter type 1 (Sub) per row: smooth pictures compress several times smaller than unfiltered.
    const row = y * (stride + 1);
    scanlines[row] = 1;
    for (let x = 0; x < stride; x++) {
      const left = x >= 3 ? (pixels[y * stride + x - 3] ?? 0) : 0;
      scanlines[row + 1 + x] = ((pixels[y * stride + x] ?? 0) - left) & 0xff;
    }
  }
  return Buffer.concat([
    SIGNATURE,
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(scanlines, { level: 9 })),
    chunk("IEND", new Uint8Array(0)),
  ]);
}
