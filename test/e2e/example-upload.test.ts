// examples/image-endpoint with a bucket: `flash run` (npm run build first) uploads the PNG to s3rver on loopback
// and answers a presigned URL; the request's s3Config wins over BUCKET_*.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalS3, startS3 } from "../files/s3rver.js";
import { flashRun } from "../process.js";

let s3: LocalS3;
let s3Url: string;

beforeAll(async () => {
  s3 = await startS3(["images", "callers"]);
  s3Url = s3.url;
});

afterAll(() => s3.close());

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
  const result = JSON.parse(run.stdout) as {
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
