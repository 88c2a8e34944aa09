// --rp_serve_api: the local platform and this process's handler as its worker, as runpod-python users expect.
import { createServer } from "node:http";
import { describe, expect, it } from "vitest";
import { flash, freePort } from "../process.js";

describe("--rp_serve_api", () => {
  for (const flags of [
    ["--rp_serve_api", "--rp_api_port"],
    ["--serve-api", "--api-port"],
  ] as const) {
    it(`${flags.join(" ")}: /runsync and /run + /stream answer through the real worker protocol`, async () => {
      const port = await freePort();
      const server = flash([
        "start",
        "examples/stream/handler.ts",
        flags[0],
        flags[1],
        String(port),
        "--api-key",
        "k1",
      ]);
      await server.waitForLine(/^Ready\. Try: curl/);
      const call = (path: string, body?: unknown) =>
        fetch(`http://127.0.0.1:${port}/v2/local${path}`, {
          method: body === undefined ? "GET" : "POST",
          headers: { Authorization: "Bearer k1", "Content-Type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        }).then((r) => r.json() as Promise<Record<string, unknown>>);
      const sync = await call("/runsync", { input: { text: "a b" } });
      expect(sync).toMatchObject({ status: "COMPLETED", output: [{ token: "a" }, { token: "b" }] });
      expect(typeof sync.delayTime).toBe("number");
      expect(typeof sync.executionTime).toBe("number");
      const job = await call("/run", { input: { text: "x y z" } });
      let chunks: unknown[] = [];
      for (let i = 0; i < 100; i++) {
        const stream = await call(`/stream/${job.id}`);
        chunks = chunks.concat((stream.stream as Array<{ output: unknown }>).map((c) => c.output));
        if (stream.status === "COMPLETED") break;
      }
      expect(chunks).toStrictEqual([{ token: "x" }, { token: "y" }, { token: "z" }]);
      server.child.kill("SIGTERM");
      expect(await server.exited).toBe(0);
    });
  }

  it("the handler sees the request's webhook and s3Config, as on the platform", async () => {
    const hooks: unknown[] = [];
    const receiver = createServer((req, res) => {
      let text = "";
      req.on("data", (c: Buffer) => {
        text += c.toString();
      });
      req.on("end", () => {
        hooks.push(JSON.parse(text));
        res.end("ok");
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    const webhook = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
    const port = await freePort();
    const server = flash([
      "start",
      "test/fixtures/job-fields.ts",
      "--rp_serve_api",
      "--rp_api_port",
      String(port),
      "--api-key",
      "k1",
    ]);
    try {
      await server.waitForLine(/^Ready\. Try: curl/);
      const s3Config = {
        accessId: "AK",
        accessSecret: "SK",
        bucketName: "out",
        endpointUrl: "http://127.0.0.1:9",
      };
      const answer = await fetch(`http://127.0.0.1:${port}/v2/local/runsync`, {
        method: "POST",
        headers: { Authorization: "Bearer k1", "Content-Type": "application/json" },
        body: JSON.stringify({ input: {}, webhook, s3Config }),
      });
      const body = (await answer.json()) as { status: string; output: unknown };
      expect(body.status).toBe("COMPLETED");
      expect(body.output).toEqual({ fields: { webhook, s3Config } });
      // The platform delivers the webhook as well, just after the answer: wait for it before stopping.
      for (let i = 0; i < 200 && hooks.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    } finally {
      server.child.kill("SIGTERM");
      expect(await server.exited).toBe(0);
      receiver.close();
    }
    // The platform delivered the webhook once; the worker only saw it.
    expect(hooks).toHaveLength(1);
  });

  it("runpod-python's paths at the root, without a key on loopback: /runsync, /run, /status/<id>, /stream/<id>", async () => {
    const port = await freePort();
    const server = flash([
      "start",
      "examples/stream/handler.ts",
      "--rp_serve_api",
      "--rp_api_port",
      String(port),
    ]);
    try {
      await server.waitForLine(/^Ready\. Try: curl/);
      expect(server.stdout.join("\n")).toContain(
        `runpod-python's paths answer too: http://127.0.0.1:${port}/run, /runsync, /status/<id>, /stream/<id> (no key needed on loopback)`,
      );
      // As its users type it: `curl localhost:8000/runsync -d '{"input": ...}'`.
      const root = (path: string, body?: unknown) =>
        fetch(`http://127.0.0.1:${port}${path}`, {
          method: body === undefined ? "GET" : "POST",
          headers: body === undefined ? {} : { "Content-Type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      const sync = await root("/runsync", { input: { text: "a b" } });
      expect(sync.status).toBe(200);
      expect(await sync.json()).toMatchObject({
        status: "COMPLETED",
        output: [{ token: "a" }, { token: "b" }],
      });
      const job = (await (await root("/run", { input: { text: "x y" } })).json()) as { id: string };
      let status = "";
      let chunks: unknown[] = [];
      for (let i = 0; i < 100 && status !== "COMPLETED"; i++) {
        const stream = (await (await root(`/stream/${job.id}`)).json()) as {
          status: string;
          stream: Array<{ output: unknown }>;
        };
        chunks = chunks.concat(stream.stream.map((c) => c.output));
        status = stream.status;
      }
      expect(chunks).toStrictEqual([{ token: "x" }, { token: "y" }]);
      expect(await (await root(`/status/${job.id}`)).json()).toMatchObject({
        id: job.id,
        status: "COMPLETED",
      });
      // A wrong key is still refused, and the console and worker routes keep theirs.
      const wrongKey = await fetch(`http://127.0.0.1:${port}/runsync`, {
        method: "POST",
        headers: { Authorization: "Bearer nope", "Content-Type": "application/json" },
        body: '{"input": {}}',
      });
      expect(wrongKey.status).toBe(401);
      expect((await root("/console/api/endpoints")).status).toBe(401);
    } finally {
      server.child.kill("SIGTERM");
      expect(await server.exited).toBe(0);
    }
  });

  it("a stray error fails the job in flight with it, and the process exits 1 (docs/design.md §4.10)", async () => {
    const port = await freePort();
    const server = flash([
      "start",
      "test/fixtures/stray-rejection.ts",
      "--rp_serve_api",
      "--rp_api_port",
      String(port),
    ]);
    try {
      await server.waitForLine(/^Ready\. Try: curl/);
      const answer = await fetch(`http://127.0.0.1:${port}/runsync`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: '{"input": {}}',
      });
      expect(await answer.json()).toMatchObject({
        status: "FAILED",
        error: "Unhandled rejection in the worker: Error: stray rejection from the handler",
      });
      await server.waitForLine(
        /\| ERROR \| .* \| Unhandled rejection \| Error: stray rejection from the handler/,
      );
      expect(await server.exited).toBe(1);
    } finally {
      server.child.kill("SIGTERM");
    }
  });

  it("an openaiCompatible() handler: the console is told, so its playground offers the chat form", async () => {
    const port = await freePort();
    const server = flash([
      "start",
      "examples/openai-compatible/handler.ts",
      "--rp_serve_api",
      "--rp_api_port",
      String(port),
      "--api-key",
      "k1",
    ]);
    try {
      await server.waitForLine(/Worker \S+ started/);
      const endpoints = (await (
        await fetch(`http://127.0.0.1:${port}/console/api/endpoints`, {
          headers: { authorization: "Bearer k1" },
        })
      ).json()) as { id: string; openaiCompatible?: boolean }[];
      expect(endpoints.map((e) => [e.id, e.openaiCompatible])).toEqual([["local", true]]);
    } finally {
      server.child.kill("SIGTERM");
      expect(await server.exited).toBe(0);
    }
  });
});
