// A worker shaped like a public image endpoint: {prompt, width, height} in, {image_url, cost} out. It draws
// its picture itself (no model download): the same prompt always gives the same picture, another prompt
// another one. On the platform, a public endpoint's image_url expires 7 days after generation.
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { handler, type Job } from "flash-worker";
import { hasBucket, upload } from "flash-worker/files";
import { encodePng } from "./png.js";

interface ImageInput {
  prompt: string;
  width?: number;
  height?: number;
}

/** The public endpoint example uses 1024 × 1024; bounds are not stated there, so these are this worker's. */
export const DEFAULT_SIZE = 1024;
export const MIN_SIZE = 16;
export const MAX_SIZE = 2048;
/** Price per megapixel (USD): a 1024 × 1024 picture costs about 0.02. */
export const COST_PER_MEGAPIXEL = 0.02;
/** How long the platform keeps a public endpoint's image_url working (interface document: 7 days). */
export const IMAGE_URL_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;

function size(name: string, value: unknown): number | string {
  if (value === undefined) return DEFAULT_SIZE;
  if (typeof value !== "number" || !Number.isInteger(value) || value < MIN_SIZE || value > MAX_SIZE) {
    return `input.${name} must be a whole number of pixels from ${MIN_SIZE} to ${MAX_SIZE}, got ${JSON.stringify(value)}`;
  }
  return value;
}

/** Draws a deterministic picture from the prompt's SHA-256: a sky gradient, a sun, and hills. */
export function draw(prompt: string, width: number, height: number): Uint8Array {
  const seed = createHash("sha256").update(prompt).digest();
  const byte = (i: number) => seed[i % seed.length] ?? 0;
  const top = [byte(0), byte(1), byte(2)];
  const bottom = [byte(3), byte(4), byte(5)];
  const sun = [255, 160 + (byte(6) % 96), 64 + (byte(7) % 128)];
  const hill = [byte(8) % 96, 64 + (byte(9) % 128), byte(10) % 96];
  const sunX = ((byte(11) / 255) * 0.6 + 0.2) * width;
  const sunY = ((byte(12) / 255) * 0.3 + 0.15) * height;
  const sunR = (0.08 + (byte(13) / 255) * 0.1) * Math.min(width, height);
  const waves = 1 + (byte(14) % 4);
  const phase = (byte(15) / 255) * Math.PI * 2;
  const pixels = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y++) {
    const t = y / Math.max(1, height - 1);
    for (let x = 0; x < width; x++) {
      const ridge = height * (0.7 + 0.1 * Math.sin((x / width) * Math.PI * 2 * waves + phase));
      const inSun = (x - sunX) ** 2 + (y - sunY) ** 2 <= sunR ** 2;
      const i = (y * width + x) * 3;
      for (let c = 0; c < 3; c++) {
        const sky = (top[c] ?? 0) * (1 - t) + (bottom[c] ?? 0) * t;
        pixels[i + c] = y >= ridge ? (hill[c] ?? 0) : inSun ? (sun[c] ?? 0) : Math.round(sky);
      }
    }
  }
  return pixels;
}

/** On the local platform: store the PNG there and return its link, which expires like a public image URL. */
async function storeOnPlatform(png: Buffer, url: string): Promise<string> {
  const answer = await fetch(url, {
    method: "POST",
    headers: { Authorization: process.env.RUNPOD_AI_API_KEY ?? "", "Content-Type": "image/png" },
    body: png,
  });
  if (!answer.ok) throw new Error(`storing the image failed: ${answer.status} ${await answer.text()}`);
  return ((await answer.json()) as { url: string }).url;
}

export default handler(async (job: Job<ImageInput>) => {
  const { prompt } = job.input;
  if (typeof prompt !== "string" || prompt.trim() === "")
    return { error: "input.prompt must be a non-empty string" };
  const width = size("width", job.input.width);
  const height = size("height", job.input.height);
  if (typeof width === "string") return { error: width };
  if (typeof height === "string") return { error: height };

  const png = encodePng({ width, height, pixels: draw(prompt, width, height) });
  // A bucket when one is configured (the request's s3Config or BUCKET_*): a presigned URL, 7 days like the
  // platform's. Else the local platform's file store, a file: URL with IMAGE_OUTPUT_DIR, or a data: URL.
  const dir = process.env.IMAGE_OUTPUT_DIR;
  const store = process.env.FLASH_FILES_URL;
  let imageUrl: string;
  if (hasBucket()) {
    imageUrl = (await upload(png, { key: `${job.id.replace(/[^\w-]/g, "_")}.png`, contentType: "image/png" }))
      .url;
  } else if (store) {
    imageUrl = await storeOnPlatform(png, store);
  } else if (dir) {
    const path = join(dir, `${job.id.replace(/[^\w-]/g, "_")}.png`);
    writeFileSync(path, png);
    imageUrl = pathToFileURL(path).href;
  } else {
    imageUrl = `data:image/png;base64,${png.toString("base64")}`;
  }
  const cost = Math.round(((width * height) / 1_000_000) * COST_PER_MEGAPIXEL * 1e6) / 1e6;
  job.log.info(`${width}x${height} PNG, ${png.length} bytes`);
  return { image_url: imageUrl, cost };
});
