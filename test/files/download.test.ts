// download() against real HTTP servers on loopback: the address guard on every hop, size cap, timeout, job folder.
import type { LookupAddress } from "node:dns";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { handler } from "../../src/index.js";
import { type AddressPolicy, PUBLIC_ONLY } from "../../src/runtime/files/address.js";
import { type Connection, downloadWith } from "../../src/runtime/files/download.js";
import { DownloadError, download } from "../../src/runtime/files/index.js";
import { runJob } from "../../src/testing/index.js";

type Route = (req: IncomingMessage, res: ServerResponse) => void;

interface TestServer {
  url: string;
  port: number;
  /** Paths requested, in order. */
  hits: string[];
  close(): Promise<void>;
}

const servers: TestServer[] = [];

async function serve(route: Route, host = "127.0.0.1"): Promise<TestServer> {
  const hits: string[] = [];
  const server: Server = createServer((req, res) => {
    hits.push(req.url ?? "");
    route(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  const handle: TestServer = {
    url: `http://${host}:${port}`,
    port,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  servers.push(handle);
  return handle;
}

const body =
  (text: string, type = "text/plain"): Route =>
  (_req, res) => {
    res.writeHead(200, { "content-type": type, "content-length": Buffer.byteLength(text) });
    res.end(text);
  };

const ENV = ["RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS", "RUNPOD_MAX_DOWNLOAD_BYTES"] as const;
let saved: Record<string, string | undefined> = {};
let scratch: string;

beforeEach(async () => {
  saved = Object.fromEntries(ENV.map((k) => [k, process.env[k]]));
  for (const k of ENV) delete process.env[k];
  scratch = await mkdtemp(join(tmpdir(), "download-test-"));
});

afterEach(async () => {
  for (const k of ENV) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  await Promise.all(servers.splice(0).map((s) => s.close()));
  await rm(scratch, { recursive: true, force: true });
});

/** Loopback 127.0.0.1 stands in for the public internet; every other non-public address stays refused. */
const only127001: AddressPolicy = (address) =>
  address === "127.0.0.1" || address === "::ffff:127.0.0.1" ? undefined : "a loopback";

/** A resolver standing in for DNS (which this machine cannot reach), for names the test makes up. */
function resolver(names: Record<string, string[]>): NonNullable<Connection["resolve"]> {
  return ((hostname: string, _options: unknown, callback: (e: Error | null, a: LookupAddress[]) => void) => {
    const addresses = names[hostname];
    if (!addresses) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`)), []);
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 })),
    );
  }) as unknown as NonNullable<Connection["resolve"]>;
}

describe("the address guard, by default", () => {
  it("refuses a loopback address without sending it a request", async () => {
    const server = await serve(body("secret"));
    await expect(download(`${server.url}/x`, { dir: scratch })).rejects.toThrow(
      `download: refused ${server.url}/x: 127.0.0.1 is a loopback address; set RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS=true to allow private addresses`,
    );
    expect(server.hits).toEqual([]);
  });

  it("refuses a name that resolves to 127.0.0.1 (localhost), checked before connecting", async () => {
    const server = await serve(body("secret"));
    const err = await download(`http://localhost:${server.port}/x`, { dir: scratch }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DownloadError);
    expect((err as Error).message).toMatch(
      new RegExp(
        `^download: refused http://localhost:${server.port}/x: localhost resolves to (127\\.0\\.0\\.1|::1), a loopback address`,
      ),
    );
    expect(server.hits).toEqual([]);
  });

  it("refuses metadata, IPv4-mapped, unspecified and private literals", async () => {
    const cases: [string, string][] = [
      ["http://169.254.169.254/latest/meta-data/", "169.254.169.254 is the cloud metadata address"],
      ["http://[fd00:ec2::254]/latest/", "fd00:ec2::254 is the cloud metadata address"],
      ["http://[::ffff:127.0.0.1]:9/", "::ffff:7f00:1 is a loopback address"],
      ["http://0.0.0.0:9/", "0.0.0.0 is an unspecified (this-network) address"],
      ["http://10.0.0.8/", "10.0.0.8 is a private (RFC 1918) address"],
      ["http://100.100.100.200/", "100.100.100.200 is a carrier-grade NAT (RFC 6598) address"],
      ["http://[fe80::1]/", "fe80::1 is a link-local address"],
      ["http://[::1]:9/", "::1 is a loopback address"],
    ];
    for (const [url, reason] of cases) {
      await expect(download(url, { dir: scratch })).rejects.toThrow(reason);
    }
  });

  it("accepts http and https only", async () => {
    await expect(download("file:///etc/passwd")).rejects.toThrow(
      'download: blocked URL scheme "file:" in file:///etc/passwd: only http and https',
    );
    await expect(download("ftp://example.com/x")).rejects.toThrow('blocked URL scheme "ftp:"');
    await expect(download("not a url")).rejects.toThrow('download: not a URL: "not a url"');
  });

  it("refuses a name with any non-public address among its answers (no DNS rebinding gap)", async () => {
    const server = await serve(body("secret"));
    const connection = { policy: only127001, resolve: resolver({ "mixed.test": ["127.0.0.1", "10.0.0.9"] }) };
    await expect(
      downloadWith(`http://mixed.test:${server.port}/`, { dir: scratch }, connection),
    ).rejects.toThrow(
      `download: refused http://mixed.test:${server.port}/: mixed.test resolves to 10.0.0.9, a loopback address`,
    );
    expect(server.hits).toEqual([]);
  });
});

describe("addresses that carry an IPv4 address (NAT64, 6to4, Teredo)", () => {
  it("refuses literals that reach a non-public IPv4 address, before any request", async () => {
    const cases: [string, string][] = [
      [
        "http://[64:ff9b::7f00:1]/",
        "64:ff9b::7f00:1 is a NAT64 (64:ff9b::/96) address for 127.0.0.1, a loopback address",
      ],
      ["http://[64:ff9b::a9fe:a9fe]/latest/", "for 169.254.169.254, the cloud metadata address"],
      [
        "http://[2002:a00:1::]/",
        "2002:a00:1:: is a 6to4 (2002::/16) address for 10.0.0.1, a private (RFC 1918) address",
      ],
      [
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
        "is a Teredo (2001::/32) address for 127.0.0.1, a loopback address",
      ],
    ];
    for (const [url, reason] of cases) {
      await expect(download(url, { dir: scratch })).rejects.toThrow(reason);
    }
  });

  it("refuses a name that resolves to one, without sending it a request", async () => {
    const server = await serve(body("secret"));
    const connection = { policy: PUBLIC_ONLY, resolve: resolver({ "nat64.test": ["64:ff9b::7f00:1"] }) };
    await expect(
      downloadWith(`http://nat64.test:${server.port}/`, { dir: scratch }, connection),
    ).rejects.toThrow(
      `nat64.test resolves to 64:ff9b::7f00:1, a NAT64 (64:ff9b::/96) address for 127.0.0.1, a loopback address`,
    );
    expect(server.hits).toEqual([]);
  });
});

describe("the URL is checked whole before any request", () => {
  const policy = { policy: only127001 };

  it("a malformed percent-escape in the path is refused; the server sees nothing", async () => {
    const server = await serve(body("never"));
    await expect(downloadWith(`${server.url}/a%zzb.png`, { dir: scratch }, policy)).rejects.toThrow(
      `download: ${server.url}/a%zzb.png: malformed percent-escape "%zz" in its path (a % starts two hex digits)`,
    );
    await expect(downloadWith(`${server.url}/end%4`, { dir: scratch }, policy)).rejects.toThrow(
      'malformed percent-escape "%4" in its path',
    );
    expect(server.hits).toEqual([]);
  });

  it("so is a redirect to one: the target is never asked", async () => {
    const target = await serve(body("never"));
    const start = await serve((_req, res) => res.writeHead(302, { location: `${target.url}/%gg` }).end());
    await expect(downloadWith(`${start.url}/a`, { dir: scratch }, policy)).rejects.toThrow(
      'malformed percent-escape "%gg"',
    );
    expect(target.hits).toEqual([]);
  });

  it("escapes that are not UTF-8 (a Latin-1 file name) are valid and downloaded", async () => {
    const server = await serve(body("latin"));
    const file = await downloadWith(`${server.url}/caf%E9.txt`, { dir: scratch }, policy);
    expect(readFileSync(file.path, "utf8")).toBe("latin");
    expect(file.path.endsWith(".txt")).toBe(true);
    expect(server.hits).toEqual(["/caf%E9.txt"]);
  });
});

describe("errors never show a URL's credentials", () => {
  const policy = { policy: only127001 };

  it("user, password, query values and fragment are *** in every message", async () => {
    const server = await serve((req, res) =>
      req.url?.startsWith("/moved") ? res.writeHead(302).end() : res.writeHead(404).end(),
    );
    const secret = (path: string) =>
      `http://alice:hunter2-pass@127.0.0.1:${server.port}${path}?token=tok-123456&X-Amz-Signature=sig-abcdef#frag-key`;
    const shown = (path: string) =>
      `http://***:***@127.0.0.1:${server.port}${path}?token=***&X-Amz-Signature=***#***`;
    const messages: string[] = [];
    for (const [url, policyUsed] of [
      [secret("/gone"), policy],
      [secret("/moved"), policy],
      [secret("/%zz"), policy],
      [secret("/blocked"), { policy: PUBLIC_ONLY }],
    ] as const) {
      const err = await downloadWith(url, { dir: scratch }, policyUsed).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DownloadError);
      messages.push((err as Error).message);
    }
    expect(messages).toEqual([
      `download: ${shown("/gone")} answered HTTP 404`,
      `download: ${shown("/moved")} redirected without a Location header`,
      `download: ${shown("/%zz")}: malformed percent-escape "%zz" in its path (a % starts two hex digits)`,
      `download: refused ${shown("/blocked")}: 127.0.0.1 is a loopback address; set RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS=true to allow private addresses`,
    ]);
    for (const message of messages) {
      for (const secretPart of ["alice", "hunter2", "tok-123456", "sig-abcdef", "frag-key"]) {
        expect(message).not.toContain(secretPart);
      }
    }
  });

  it("a failed connection and a scheme refusal too", async () => {
    const refused = await downloadWith(
      "http://bob:pw-secret-1@127.0.0.1:9/x?key=k-secret-2",
      {},
      policy,
    ).then(
      () => new Error("downloaded"),
      (e: unknown) => e as Error,
    );
    expect(refused.message).toMatch(
      /^download: http:\/\/\*\*\*:\*\*\*@127\.0\.0\.1:9\/x\?key=\*\*\* failed: /,
    );
    const scheme = await download("ftp://bob:pw-secret-1@example.com/x?key=k-secret-2").then(
      () => new Error("downloaded"),
      (e: unknown) => e as Error,
    );
    expect(scheme.message).toBe(
      'download: blocked URL scheme "ftp:" in ftp://***:***@example.com/x?key=***: only http and https',
    );
  });
});

describe("the address actually connected to", () => {
  it("is checked again on the open socket, before a byte is sent", async () => {
    const server = await serve(body("secret"));
    // Allows the address when the URL is read, refuses it on the socket: only the socket check can refuse.
    let asked = 0;
    const flips: AddressPolicy = () => (++asked === 1 ? undefined : "a refused-on-connect");
    await expect(downloadWith(`${server.url}/x`, { dir: scratch }, { policy: flips })).rejects.toThrow(
      `download: refused ${server.url}/x: connected to 127.0.0.1, a refused-on-connect address`,
    );
    expect(asked).toBe(2);
    expect(server.hits).toEqual([]);
  });
});

describe("redirects: the check is repeated on every hop", () => {
  it("follows a redirect to an allowed address", async () => {
    const target = await serve(body("moved here"));
    const start = await serve((_req, res) =>
      res.writeHead(302, { location: `${target.url}/final.txt` }).end(),
    );
    const file = await downloadWith(`${start.url}/a`, { dir: scratch }, { policy: only127001 });
    expect(readFileSync(file.path, "utf8")).toBe("moved here");
    expect(file.path.endsWith(".txt")).toBe(true);
    expect(target.hits).toEqual(["/final.txt"]);
  });

  it("refuses a redirect to a private address literal; the target sees nothing", async () => {
    const inside = await serve(body("internal"), "127.0.0.2");
    const start = await serve((_req, res) => res.writeHead(301, { location: `${inside.url}/admin` }).end());
    await expect(downloadWith(`${start.url}/a`, { dir: scratch }, { policy: only127001 })).rejects.toThrow(
      `download: refused ${inside.url}/admin: 127.0.0.2 is a loopback address`,
    );
    expect(start.hits).toEqual(["/a"]);
    expect(inside.hits).toEqual([]);
  });

  it("refuses a redirect to a name that resolves to a private address", async () => {
    const inside = await serve(body("internal"), "127.0.0.2");
    const start = await serve((_req, res) =>
      res.writeHead(307, { location: `http://internal.test:${inside.port}/admin` }).end(),
    );
    const connection = {
      policy: only127001,
      resolve: resolver({ "internal.test": ["127.0.0.2"], "public.test": ["127.0.0.1"] }),
    };
    await expect(
      downloadWith(`http://public.test:${start.port}/a`, { dir: scratch }, connection),
    ).rejects.toThrow(`internal.test resolves to 127.0.0.2, a loopback address`);
    expect(start.hits).toEqual(["/a"]);
    expect(inside.hits).toEqual([]);
  });

  it("stops after maxRedirects", async () => {
    const loop = await serve((req, res) => res.writeHead(302, { location: `${req.url}x` }).end());
    await expect(
      downloadWith(`${loop.url}/`, { dir: scratch, maxRedirects: 3 }, { policy: only127001 }),
    ).rejects.toThrow(`download: more than 3 redirects, starting from ${loop.url}/`);
    expect(loop.hits).toEqual(["/", "/x", "/xx", "/xxx"]);
  });
});

describe("with RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS=true", () => {
  it("downloads from loopback: path, size and content type", async () => {
    process.env.RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS = "true";
    const server = await serve(body('{"a":1}', "application/json"));
    const file = await download(`${server.url}/data.json?sig=1`, { dir: scratch });
    expect(file.size).toBe(7);
    expect(file.contentType).toBe("application/json");
    expect(dirname(file.path)).toBe(scratch);
    expect(file.path).toMatch(/[0-9a-f-]{36}\.json$/);
    expect(readFileSync(file.path, "utf8")).toBe('{"a":1}');
  });

  it("takes the extension from Content-Disposition, and localhost by name", async () => {
    process.env.RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS = "1";
    const server = await serve((_req, res) => {
      res.writeHead(200, { "content-disposition": 'attachment; filename="photo.png"' });
      res.end("png");
    });
    const file = await download(`http://localhost:${server.port}/get?id=3`, { dir: scratch });
    expect(file.path.endsWith(".png")).toBe(true);
    expect(file.contentType).toBe("application/octet-stream");
  });

  it("a bad value of the switch is a clear error", async () => {
    process.env.RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS = "maybe";
    await expect(download("http://127.0.0.1:9/")).rejects.toThrow(
      'Invalid value "maybe" in environment variable RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS: expected true or false',
    );
  });
});

describe("size cap and timeout", () => {
  const policy = { policy: only127001 };

  it("stops a body that goes past the cap mid-stream and removes the part written", async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      const chunk = Buffer.alloc(64 * 1024, 1);
      let sent = 0;
      const more = () => {
        while (sent < 40) {
          sent++;
          if (!res.write(chunk)) return void res.once("drain", more);
        }
        res.end();
      };
      more();
    });
    await expect(
      downloadWith(`${server.url}/big`, { dir: scratch, maxBytes: 200_000 }, policy),
    ).rejects.toThrow(
      `download: ${server.url}/big exceeds the size cap of 200000 bytes (the body went past it); raise RUNPOD_MAX_DOWNLOAD_BYTES or pass maxBytes`,
    );
    expect(readdirSync(scratch)).toEqual([]);
  });

  it("refuses a declared Content-Length over the cap from RUNPOD_MAX_DOWNLOAD_BYTES before reading", async () => {
    process.env.RUNPOD_MAX_DOWNLOAD_BYTES = "10";
    const server = await serve(body("eleven char"));
    await expect(downloadWith(`${server.url}/f`, { dir: scratch }, policy)).rejects.toThrow(
      "exceeds the size cap of 10 bytes (11 bytes declared)",
    );
    expect(readdirSync(scratch)).toEqual([]);
    process.env.RUNPOD_MAX_DOWNLOAD_BYTES = "ten";
    await expect(downloadWith(`${server.url}/f`, { dir: scratch }, policy)).rejects.toThrow(
      'Invalid value "ten" in environment variable RUNPOD_MAX_DOWNLOAD_BYTES',
    );
  });

  it("times out when the server stops sending, before or after the headers", async () => {
    const stalls: ServerResponse[] = [];
    const server = await serve((req, res) => {
      stalls.push(res);
      if (req.url === "/body") {
        res.writeHead(200, { "content-length": "100" });
        res.write("partial");
      }
    });
    for (const path of ["/headers", "/body"]) {
      await expect(
        downloadWith(`${server.url}${path}`, { dir: scratch, timeoutMs: 300 }, policy),
      ).rejects.toThrow(`download: ${server.url}${path} timed out: nothing received for 0.3 s`);
    }
    expect(readdirSync(scratch)).toEqual([]);
  });

  it("an HTTP error status is an error, not a saved error page", async () => {
    const server = await serve((_req, res) => res.writeHead(404).end("not found"));
    await expect(downloadWith(`${server.url}/gone`, { dir: scratch }, policy)).rejects.toThrow(
      `download: ${server.url}/gone answered HTTP 404`,
    );
    expect(readdirSync(scratch)).toEqual([]);
  });
});

describe("edges (mutants that survived)", () => {
  const policy = { policy: only127001 };

  it("a body exactly at the cap is kept, declared or streamed", async () => {
    const declared = await serve(body("1234567890"));
    expect((await downloadWith(`${declared.url}/d`, { dir: scratch, maxBytes: 10 }, policy)).size).toBe(10);
    const streamed = await serve((_req, res) => {
      res.writeHead(200);
      res.write("12345");
      res.end("67890");
    });
    expect((await downloadWith(`${streamed.url}/s`, { dir: scratch, maxBytes: 10 }, policy)).size).toBe(10);
  });

  it("maxBytes and timeoutMs must be whole numbers >= 1", async () => {
    for (const [name, value] of [
      ["maxBytes", 0],
      ["maxBytes", 1.5],
      ["timeoutMs", -1],
    ] as const) {
      await expect(downloadWith("http://127.0.0.1:9/", { [name]: value }, policy)).rejects.toThrow(
        `download: ${name} must be a whole number >= 1, got ${value}`,
      );
    }
  });

  it("a redirect without Location, and a 300 that is no redirect, are errors", async () => {
    const server = await serve((req, res) => res.writeHead(req.url === "/moved" ? 302 : 300).end());
    await expect(downloadWith(`${server.url}/moved`, { dir: scratch }, policy)).rejects.toThrow(
      `download: ${server.url}/moved redirected without a Location header`,
    );
    await expect(downloadWith(`${server.url}/choices`, { dir: scratch }, policy)).rejects.toThrow(
      `download: ${server.url}/choices answered HTTP 300`,
    );
  });

  it("an IPv6 loopback literal is refused as loopback, brackets and all", async () => {
    await expect(download("http://[::1]:9/x")).rejects.toThrow(
      /^download: refused http:\/\/\[::1\]:9\/x: ::1 is /,
    );
  });

  it("the extension: filename*= and quoted or bare filename=, else the URL's; never a long or odd one", async () => {
    const disposition: Record<string, string> = {
      "/star": "attachment; filename*=UTF-8''data.csv",
      "/bare": "inline; filename=notes.txt; size=3",
      "/long": 'attachment; filename="x.abcdefghijklm"',
      "/odd": 'attachment; filename="x.p-g"',
    };
    const server = await serve((req, res) => {
      const value = disposition[req.url ?? ""];
      res.writeHead(200, value ? { "content-disposition": value } : {});
      res.end("abc");
    });
    const ext = async (path: string) =>
      (await downloadWith(`${server.url}${path}`, { dir: scratch }, policy)).path.replace(
        /^.*?(\.[^./]*)?$/,
        "$1",
      );
    expect(await ext("/star")).toBe(".csv");
    expect(await ext("/bare")).toBe(".txt");
    expect(await ext("/long")).toBe("");
    expect(await ext("/odd")).toBe("");
    expect(await ext("/file.tar.gz")).toBe(".gz");
    expect(await ext("/plain")).toBe("");
  });

  it("a caller's abort says it stopped, with the reason", async () => {
    const server = await serve(() => undefined);
    const controller = new AbortController();
    const pending = downloadWith(`${server.url}/slow`, { dir: scratch, signal: controller.signal }, policy);
    await new Promise<void>((resolve) => {
      const check = () => (server.hits.length > 0 ? resolve() : setTimeout(check, 10));
      check();
    });
    controller.abort(new Error("job cancelled"));
    await expect(pending).rejects.toThrow(`download: ${server.url}/slow stopped: job cancelled`);
  });
});

describe("inside a job", () => {
  it("saves into the job's folder, which is removed when the job ends, even when it fails", async () => {
    process.env.RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS = "true";
    const server = await serve(body("input image"));
    const seen: string[] = [];
    const ok = handler(async (job) => {
      const file = await download(`${server.url}/in.png`);
      seen.push(file.path);
      expect(readFileSync(file.path, "utf8")).toBe("input image");
      if (job.input === "fail") throw new Error("after download");
      return file.size;
    });
    expect((await runJob(ok, "pass")).result).toEqual({ output: 11 });
    const failed = await runJob(ok, "fail");
    expect(String(failed.result?.error)).toContain("after download");
    expect(seen).toHaveLength(2);
    expect(dirname(seen[0]!)).not.toBe(dirname(seen[1]!));
    for (const path of seen) {
      expect(dirname(path)).toMatch(/flash-job-test_job-/);
      expect(existsSync(dirname(path))).toBe(false);
    }
  });

  it("a stopped job stops its download and its folder goes", async () => {
    process.env.RUNPOD_ALLOW_PRIVATE_DOWNLOAD_URLS = "true";
    let requested!: () => void;
    const reached = new Promise<void>((resolve) => (requested = resolve));
    const server = await serve((_req, res) => {
      res.writeHead(200);
      res.write("some");
      requested();
    });
    let failure: unknown;
    let folder = "";
    const controller = new AbortController();
    const def = handler(async () => {
      try {
        await download(`${server.url}/slow`, { timeoutMs: 60_000 });
      } catch (err) {
        failure = err;
      }
      return "done";
    });
    const job = runJob(def, null, { signal: controller.signal });
    await reached;
    // The folder is made once the headers are in.
    await expect
      .poll(() => (folder = readdirSync(tmpdir()).find((n) => n.startsWith("flash-job-test_job-")) ?? ""))
      .not.toBe("");
    controller.abort(new Error("Job cancelled"));
    const out = await job;
    expect(out.aborted).toBeInstanceOf(Error);
    await expect.poll(() => failure).toBeInstanceOf(DownloadError);
    expect((failure as Error).message).toBe(`download: ${server.url}/slow stopped: Job cancelled`);
    expect(existsSync(join(tmpdir(), folder))).toBe(false);
  });
});
