// examples/image-endpoint with a bucket: `flash run` (npm run build first) uploads the PNG to s3rver on loopback
// and answers a presigned URL; the request's s3Config wins over BUCKET_*.
import { mkdtemp, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flashRun } from "../process.js";

let s3: S3rver;
let s3Url: string;
let storage: string;

beforeAll(async () => {
  storage = await mkdtemp(join(tmpdir(), "s3rver-example-"));
  s3 = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory: storage,
    configureBuckets: [
      { name: "images", configs: [] },
      { name: "callers", configs: [] },
    ],
  });
  s3Url = `http://127.0.0.1:${((await s3.run()) as unknown as AddressInfo).port}`;
});

afterAll(async () => {
  await s3.close();
  await rm(storage, { recursive: true, force: true });
});

const bucketEnv = () => ({
  BUCKET_ENDPOINT_URL: `${s3Url}/images`,
  BUCKET_ACCESS_KEY_ID: "S3RVER",
  BUCKET_SECRET_ACCESS_KEY: "S3RVER",
});

async function imageUrl(job: Record<string, unknown>, env: Record<string, string>): Promise<string> {
  const run = await flashRun(
    ["run", "examples/image-endpoint/handler.ts", "--test-input", JSON.stringify(job)],
    env,
  );
  expect(run.code, run.stdout + run.stderr).toBe(0);
  const line = run.stdout.split("\n").find((l) => l.includes("| Job result: "));
  const result = JSON.parse(line!.slice(line!.indexOf("| Job result: ") + 13)) as {
    output: { image_url: string };
  };
  return result.output.image_url;
}

describe("examples/image-endpoint uploads its PNG when a bucket is configured", () => {
  it("BUCKET_ENDPOINT_URL: the image_url is a presigned URL that serves the PNG to anyone", async () => {
    const url = await imageUrl(
      { id: "img-1", input: { prompt: "a kite", width: 32, height: 24 } },
      bucketEnv(),
    );
    expect(url.startsWith(`${s3Url}/images/img-1.png?`)).toBe(true);
    expect(new URL(url).searchParams.get("X-Amz-Expires")).toBe("604800");
    const answer = await fetch(url);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toBe("image/png");
    const png = Buffer.from(await answer.arrayBuffer());
    expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([32, 24]);
  });

  it("the request's s3Config takes precedence; without any bucket the data: URL stays", async () => {
    const s3Config = {
      accessId: "S3RVER",
      accessSecret: "S3RVER",
      bucketName: "callers",
      endpointUrl: s3Url,
    };
    const url = await imageUrl(
      { id: "img-2", input: { prompt: "a kite", width: 16, height: 16 }, s3Config },
      bucketEnv(),
    );
    expect(url).toMatch(new RegExp(`^${s3Url}/callers/img-2.png\\?`));
    expect((await fetch(url)).status).toBe(200);
    const fallback = await imageUrl({ input: { prompt: "a kite", width: 16, height: 16 } }, {});
    expect(fallback).toMatch(/^data:image\/png;base64,/);
  });
});
