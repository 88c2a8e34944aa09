// upload() with the real AWS SDK against a real S3-compatible server (s3rver) on loopback, and faults in front of it.
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { type AddressInfo, createServer as createTcpServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { handler } from "../../src/index.js";
import { resolveBucket } from "../../src/runtime/files/bucket.js";
import { hasBucket, UploadError, type UploadOptions, upload } from "../../src/runtime/files/index.js";
import { runJob } from "../../src/testing/index.js";
import { type LocalS3, startS3 } from "./s3rver.js";

const ENV = ["BUCKET_ENDPOINT_URL", "BUCKET_ACCESS_KEY_ID", "BUCKET_SECRET_ACCESS_KEY"] as const;
let saved: Record<string, string | undefined> = {};
let s3: LocalS3;
let s3Url: string;

beforeAll(async () => {
  s3 = await startS3(["results", "job-bucket"]);
  s3Url = s3.url;
});

afterAll(() => s3.close());

beforeEach(() => {
  saved = Object.fromEntries(ENV.map((k) => [k, process.env[k]]));
  for (const k of ENV) delete process.env[k];
});

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const k of ENV) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  await Promise.all(closers.splice(0).map((close) => close()));
});

/** s3rver's built-in account. */
function useBucket(endpointUrl: string, accessKeyId = "S3RVER", secret = "S3RVER"): void {
  process.env.BUCKET_ENDPOINT_URL = endpointUrl;
  process.env.BUCKET_ACCESS_KEY_ID = accessKeyId;
  process.env.BUCKET_SECRET_ACCESS_KEY = secret;
}

/** Fetches a URL as a stranger would: no credentials, no SDK. */
async function fetchPlain(url: string): Promise<{ status: number; type: string | null; bytes: Buffer }> {
  const response = await fetch(url);
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    bytes: Buffer.from(await response.arrayBuffer()),
  };
}

/** A handler that uploads what the test says and returns the answer; failures end the job FAILED. */
function uploader(data: () => Parameters<typeof upload>[0], options: UploadOptions = {}) {
  return handler(async () => upload(data(), options));
}

function failureMessage(result: { error?: unknown } | undefined): string {
  expect(typeof result?.error).toBe("string");
  const info = JSON.parse(result?.error as string) as { error_type: string; error_message: string };
  expect(info.error_type).toBe("<class 'UploadError'>");
  return info.error_message;
}

/** A loopback HTTP server in front of s3rver that records requests and answers the first `failures` with `fail`. */
async function frontOf(
  failures: number,
  fail: (res: ServerResponse, req: IncomingMessage) => void,
): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  const target = new URL(s3Url);
  const server: Server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    if (seen.length <= failures) return fail(res, req);
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const unavailable = (res: ServerResponse) => {
  res.writeHead(503, { "content-type": "application/xml" });
  res.end(
    "<Error><Code>ServiceUnavailable</Code><Message>Please reduce your request rate.</Message></Error>",
  );
};

describe("upload to BUCKET_ENDPOINT_URL (endpoint plus bucket)", () => {
  it("uploads bytes and answers a presigned URL that works without credentials", async () => {
    useBucket(`${s3Url}/results`);
    const out = await runJob(
      uploader(() => Buffer.from("hello bucket"), { key: "greetings/hello.txt", contentType: "text/plain" }),
      null,
    );
    const answer = out.result?.output as { url: string; key: string; bucket: string };
    expect(answer.key).toBe("greetings/hello.txt");
    expect(answer.bucket).toBe("results");
    const url = new URL(answer.url);
    expect(`${url.origin}${url.pathname}`).toBe(`${s3Url}/results/greetings/hello.txt`);
    expect(url.searchParams.get("X-Amz-Expires")).toBe("604800");
    expect(url.searchParams.get("X-Amz-Credential")).toMatch(/^S3RVER\/\d{8}\/us-east-1\/s3\/aws4_request$/);
    expect(url.searchParams.get("X-Amz-Signature")).toMatch(/^[0-9a-f]{64}$/);
    const got = await fetchPlain(answer.url);
    expect(got.status).toBe(200);
    expect(got.type).toBe("text/plain");
    expect(got.bytes.toString()).toBe("hello bucket");
  });

  it("a presigned URL signed with an unknown key is refused by the server (the URL carries the signature)", async () => {
    useBucket(`${s3Url}/results`);
    const out = await runJob(
      uploader(() => Buffer.from("x"), { key: "signed.bin", expiresIn: 60 }),
      null,
    );
    const { url } = out.result!.output as { url: string };
    expect(new URL(url).searchParams.get("X-Amz-Expires")).toBe("60");
    const forged = url.replace("X-Amz-Credential=S3RVER", "X-Amz-Credential=SOMEONE");
    expect((await fetchPlain(forged)).status).toBe(403);
  });

  it("uploads a file by path: the key is <job id>/<random>.<ext>, the type from the extension", async () => {
    useBucket(`${s3Url}/results`);
    const dir = await mkdtemp(join(tmpdir(), "upload-src-"));
    closers.push(() => rm(dir, { recursive: true, force: true }));
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
    writeFileSync(join(dir, "out.png"), png);
    const out = await runJob(
      uploader(() => join(dir, "out.png")),
      null,
      { id: "job-42" },
    );
    const answer = out.result?.output as { url: string; key: string };
    expect(answer.key).toMatch(/^job-42\/[0-9a-f-]{36}\.png$/);
    const got = await fetchPlain(answer.url);
    expect(got.type).toBe("image/png");
    expect(got.bytes.equals(png)).toBe(true);
  });

  it("sends a large stream in parts (multipart upload) and it arrives whole", async () => {
    const front = await frontOf(0, unavailable);
    useBucket(`${front.url}/results`);
    const big = Buffer.alloc(20 * 1024 * 1024);
    for (let i = 0; i < big.length; i += 4096) big[i] = i % 251;
    const out = await runJob(
      uploader(() => Readable.from([big.subarray(0, 7_000_000), big.subarray(7_000_000)]), {
        key: "big.bin",
      }),
      null,
    );
    const answer = out.result?.output as { url: string };
    expect(front.seen.filter((r) => r.startsWith("POST /results/big.bin?uploads"))).toHaveLength(1);
    expect(front.seen.filter((r) => /^PUT \/results\/big\.bin\?.*partNumber=/.test(r))).toHaveLength(3);
    const got = await fetchPlain(answer.url);
    expect(got.bytes.length).toBe(big.length);
    expect(createHash("sha256").update(got.bytes).digest("hex")).toBe(
      createHash("sha256").update(big).digest("hex"),
    );
  });
});

describe("the request's s3Config", () => {
  it("takes precedence over the environment", async () => {
    useBucket(`${s3Url}/results`);
    const s3Config = {
      accessId: "S3RVER",
      accessSecret: "S3RVER",
      bucketName: "job-bucket",
      endpointUrl: s3Url,
    };
    const out = await runJob(
      uploader(() => Buffer.from("for the caller"), { key: "mine.txt" }),
      null,
      {
        fields: { s3Config },
      },
    );
    const answer = out.result?.output as { url: string; bucket: string };
    expect(answer.bucket).toBe("job-bucket");
    expect((await fetchPlain(answer.url)).bytes.toString()).toBe("for the caller");
    expect((await fetchPlain(`${s3Url}/results/mine.txt`)).status).toBe(404);
  });

  it("an incomplete s3Config is a clear job error", async () => {
    useBucket(`${s3Url}/results`);
    const out = await runJob(
      uploader(() => Buffer.from("x")),
      null,
      {
        fields: { s3Config: { endpointUrl: s3Url, bucketName: "job-bucket" } },
      },
    );
    expect(failureMessage(out.result)).toBe(
      "upload: the request's s3Config lacks accessId, accessSecret (strings expected)",
    );
  });
});

describe("failures end the job FAILED with a clear message", () => {
  it("bad credentials", async () => {
    useBucket(`${s3Url}/results`, "NOT-A-KEY", "nope");
    const out = await runJob(
      uploader(() => Buffer.from("x"), { key: "k" }),
      null,
    );
    expect(failureMessage(out.result)).toBe(
      `upload: ${s3Url} (bucket "results", from BUCKET_ENDPOINT_URL) refused the credentials (InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our records.)`,
    );
  });

  it("a bucket that does not exist", async () => {
    useBucket(`${s3Url}/no-such-bucket`);
    const out = await runJob(
      uploader(() => Buffer.from("x"), { key: "k" }),
      null,
    );
    expect(failureMessage(out.result)).toBe(`upload: bucket "no-such-bucket" does not exist at ${s3Url}`);
  });

  it("a server that is down: nothing listening", async () => {
    const closed = createTcpServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    useBucket(`http://127.0.0.1:${port}/results`);
    const out = await runJob(
      uploader(() => Buffer.from("x"), { key: "k" }),
      null,
    );
    expect(failureMessage(out.result)).toMatch(
      new RegExp(
        `^upload: could not reach http://127\\.0\\.0\\.1:${port} \\(bucket "results", from BUCKET_ENDPOINT_URL\\) after 3 tries: .*ECONNREFUSED`,
      ),
    );
  });

  it("connections reset: retried, then a FAILED job", async () => {
    let connections = 0;
    const resetting = createTcpServer((socket) => {
      connections++;
      socket.resetAndDestroy();
    });
    await new Promise<void>((resolve) => resetting.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise<void>((resolve) => resetting.close(() => resolve())));
    const port = (resetting.address() as AddressInfo).port;
    useBucket(`http://127.0.0.1:${port}/results`);
    const out = await runJob(
      uploader(() => Buffer.from("x"), { key: "k" }),
      null,
    );
    expect(failureMessage(out.result)).toMatch(/^upload: could not reach .* after 3 tries: .*ECONNRESET/);
    expect(connections).toBe(3);
  });

  it("5xx answers are retried: one 503 then success", async () => {
    const front = await frontOf(1, unavailable);
    useBucket(`${front.url}/results`);
    const out = await runJob(
      uploader(() => Buffer.from("second time"), { key: "retry.txt" }),
      null,
    );
    const answer = out.result?.output as { url: string };
    expect(front.seen.filter((r) => r.startsWith("PUT /results/retry.txt"))).toHaveLength(2);
    expect((await fetchPlain(answer.url.replace(front.url, s3Url))).bytes.toString()).toBe("second time");
  });

  it("5xx answers every time: three tries, then a FAILED job", async () => {
    const front = await frontOf(Number.POSITIVE_INFINITY, unavailable);
    useBucket(`${front.url}/results`);
    const out = await runJob(
      uploader(() => Buffer.from("x"), { key: "k" }),
      null,
    );
    expect(failureMessage(out.result)).toBe(
      `upload: kept failing (HTTP 503) at ${front.url} (bucket "results", from BUCKET_ENDPOINT_URL) after 3 tries: ServiceUnavailable: Please reduce your request rate.`,
    );
    expect(front.seen).toHaveLength(3);
  });

  it("no bucket configured at all", async () => {
    expect(hasBucket()).toBe(false);
    await expect(upload(Buffer.from("x"))).rejects.toThrow(
      "upload: no bucket configured: set BUCKET_ENDPOINT_URL (http(s)://host/bucket), BUCKET_ACCESS_KEY_ID and BUCKET_SECRET_ACCESS_KEY, or send s3Config with the request",
    );
    process.env.BUCKET_ENDPOINT_URL = `${s3Url}/results`;
    await expect(upload(Buffer.from("x"))).rejects.toThrow(
      "upload: BUCKET_ACCESS_KEY_ID and BUCKET_SECRET_ACCESS_KEY not set (the bucket needs all three)",
    );
  });

  it("bad arguments", async () => {
    useBucket(`${s3Url}/results`);
    await expect(upload(Buffer.from("x"), { expiresIn: 604_801 })).rejects.toThrow(
      "upload: expiresIn must be whole seconds from 1 to 604800, got 604801",
    );
    await expect(upload("/no/such/file.png")).rejects.toThrow(
      new UploadError("upload: no file at /no/such/file.png"),
    );
    await expect(upload(42 as never)).rejects.toThrow("upload: data must be bytes");
  });
});

describe("BUCKET_ENDPOINT_URL forms", () => {
  it("path-style (endpoint/bucket) and virtual-hosted (bucket.host), with the region from the host", () => {
    useBucket("https://minio.internal:9000/prefix/renders");
    expect(resolveBucket()).toMatchObject({
      endpoint: "https://minio.internal:9000/prefix",
      bucket: "renders",
      pathStyle: true,
      region: "us-east-1",
    });
    useBucket("https://my-bucket.s3.us-west-2.amazonaws.com");
    expect(resolveBucket()).toMatchObject({
      endpoint: "https://s3.us-west-2.amazonaws.com",
      bucket: "my-bucket",
      pathStyle: false,
      region: "us-west-2",
    });
    useBucket("https://art.nyc3.digitaloceanspaces.com");
    expect(resolveBucket()).toMatchObject({ bucket: "art", region: "nyc3", pathStyle: false });
    useBucket("http://127.0.0.1:9000");
    expect(() => resolveBucket()).toThrow("upload: BUCKET_ENDPOINT_URL must name the bucket");
    expect(hasBucket()).toBe(true);
  });
});
