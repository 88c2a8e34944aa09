// Standard Schema input validation with real zod and valibot schemas: queue jobs, the queue worker, route bodies.
import * as v from "valibot";
import { afterEach, beforeEach, describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { Endpoint, handler, type Job, ValidationError } from "../../../src/index.js";
import { formatPath } from "../../../src/job/validate.js";
import { createLogger } from "../../../src/log/index.js";
import { RouteServer } from "../../../src/runtime/lb/server.js";
import { runJob } from "../../../src/testing/index.js";
import { type RunningWorker, startWorker } from "../../conformance/harness.js";
import { RecordingPlatform } from "../../conformance/recording-platform.js";

/** The error_message of a handler-exception result. */
function failure(result: { error?: unknown } | undefined): { error_type: string; error_message: string } {
  expect(typeof result?.error).toBe("string");
  return JSON.parse(result?.error as string);
}

const zodInput = z.object({
  prompt: z.string().min(1),
  steps: z.number().int().default(20),
  size: z.tuple([z.number(), z.number()]).optional(),
  images: z.array(z.object({ url: z.url() })).default([]),
  mode: z.union([z.literal("fast"), z.object({ quality: z.number().max(10) })]).optional(),
});

const valibotInput = v.object({
  prompt: v.pipe(v.string(), v.minLength(1, "prompt must not be empty")),
  steps: v.optional(v.number(), 20),
  tags: v.optional(v.array(v.string()), []),
  mode: v.optional(v.union([v.literal("fast"), v.object({ quality: v.pipe(v.number(), v.maxValue(10)) })])),
});

describe("handler(fn, { input }) with zod", () => {
  it("gives the handler the parsed input, defaults applied, and types job.input from the schema", async () => {
    let seen: unknown;
    const def = handler(
      (job) => {
        expectTypeOf(job.input.steps).toEqualTypeOf<number>();
        expectTypeOf(job.input.prompt).toEqualTypeOf<string>();
        seen = job.input;
        return { steps: job.input.steps };
      },
      { input: zodInput },
    );
    const out = await runJob(def, { prompt: "a cat" });
    expect(out.result).toEqual({ output: { steps: 20 } });
    expect(seen).toEqual({ prompt: "a cat", steps: 20, images: [] });
  });

  it("fails the job before the handler runs, listing every issue with its path", async () => {
    let ran = false;
    const def = handler(
      () => {
        ran = true;
        return "no";
      },
      { input: zodInput },
    );
    const out = await runJob(def, {
      steps: "many",
      size: [512, "wide"],
      images: [{ url: "https://x/a.png" }, { url: "not a url" }],
      mode: { quality: 11 },
    } as never);
    expect(ran).toBe(false);
    const info = failure(out.result);
    expect(info.error_type).toBe("<class 'ValidationError'>");
    const lines = info.error_message.split("\n");
    expect(lines[0]).toBe(`Invalid input (${lines.length - 1} issues):`);
    expect(lines.slice(1).map((l) => l.split(":")[0])).toEqual([
      "input.prompt",
      "input.steps",
      "input.size[1]",
      "input.images[1].url",
      "input.mode.quality",
    ]);
    expect(info.error_message).toContain("input.steps: Invalid input: expected number, received string");
    expect(info.error_message).toContain("input.prompt: Invalid input: expected string, received undefined");
  });

  it("an input that is not an object at all is one issue at `input`", async () => {
    const out = await runJob(
      handler(() => 1, { input: zodInput }),
      "text" as never,
    );
    expect(failure(out.result).error_message).toBe(
      "Invalid input (1 issue):\ninput: Invalid input: expected object, received string",
    );
  });

  it("async refinements are awaited", async () => {
    const schema = z
      .object({ n: z.number() })
      .refine(async (x) => x.n % 2 === 0, { message: "n must be even" });
    const def = handler((job) => job.input.n * 2, { input: schema });
    expect((await runJob(def, { n: 4 })).result).toEqual({ output: 8 });
    expect(failure((await runJob(def, { n: 3 })).result).error_message).toBe(
      "Invalid input (1 issue):\ninput: n must be even",
    );
  });

  it("generator handlers still stream after validation", async () => {
    const def = handler(
      function* (job: Job<{ count: number }>) {
        for (let i = 0; i < job.input.count; i++) yield i;
      },
      { input: z.object({ count: z.number() }), returnAggregateStream: true },
    );
    const out = await runJob(def, { count: 3 });
    expect(out.isStream).toBe(true);
    expect(out.chunks).toEqual([0, 1, 2]);
    expect(out.result).toEqual({ output: [0, 1, 2] });
  });
});

describe("handler(fn, { input }) with valibot", () => {
  it("accepts, with defaults, and refuses with every issue (unions and arrays)", async () => {
    const def = handler((job) => job.input, { input: valibotInput });
    expect((await runJob(def, { prompt: "x", mode: "fast" })).result).toEqual({
      output: { prompt: "x", steps: 20, tags: [], mode: "fast" },
    });
    const bad = await runJob(def, { prompt: "", tags: ["a", 2], mode: "slow" } as never);
    const message = failure(bad.result).error_message;
    expect(message.split("\n")[0]).toBe("Invalid input (3 issues):");
    expect(message).toContain("input.prompt: prompt must not be empty");
    expect(message).toContain("input.tags[1]: Invalid type: Expected string but received 2");
    expect(message).toMatch(/\ninput\.mode: Invalid type: Expected \("fast" \| Object\) but received "slow"/);
  });
});

describe("bad options", () => {
  it("refuses an input option that is not a Standard Schema", () => {
    expect(() => handler(() => 1, { input: { parse: () => 1 } as never })).toThrow(
      "handler options: input must be a Standard Schema",
    );
  });

  it("formats odd keys as a reader would write them", () => {
    expect(formatPath("input", ["a", 0, { key: "b c" }, "7", { key: Symbol("s") }])).toBe(
      'input.a[0]["b c"][7][Symbol(s)]',
    );
  });
});

describe("the queue worker fails an invalid job with the issues (one engine for every mode)", () => {
  let platform: RecordingPlatform;
  let running: RunningWorker | undefined;
  beforeEach(async () => {
    platform = await new RecordingPlatform().start();
  });
  afterEach(async () => {
    await running?.stop();
    await platform.close();
  });

  it("posts the validation error as the job's result and runs a valid job", async () => {
    running = startWorker(platform, (job) => ({ steps: (job.input as { steps: number }).steps }), {
      input: zodInput,
    });
    platform.push({ id: "bad-1", input: { steps: 3 } });
    platform.push({ id: "good-1", input: { prompt: "p", steps: 3 } });
    await platform.waitFor((rs) => rs.filter((r) => r.route === "done").length === 2);
    const bodies = new Map(
      platform.of("done").map((r) => [/job-done\/\w+\/([\w-]+)/.exec(r.url)?.[1], JSON.parse(r.body)]),
    );
    expect(bodies.get("good-1")).toEqual({ output: { steps: 3 } });
    const info = JSON.parse(bodies.get("bad-1").error);
    expect(info.error_message).toBe(
      "Invalid input (1 issue):\ninput.prompt: Invalid input: expected string, received undefined",
    );
  });
});

describe("load-balanced routes: { body: schema } answers 400 with the issues", () => {
  let server: RouteServer | undefined;
  afterEach(async () => {
    await server?.close(0);
  });

  async function listen(api: Endpoint): Promise<string> {
    server = new RouteServer(api, { log: createLogger({ level: "SILENT", json: false }) });
    expect(await server.start()).toBe(true);
    return server.app.listen({ host: "127.0.0.1", port: 0 });
  }

  it("passes the parsed body to the route and refuses a bad one (zod and valibot)", async () => {
    const api = new Endpoint({ name: "validated" });
    api.post(
      "/generate",
      (body) => {
        expectTypeOf(body.steps).toEqualTypeOf<number>();
        return { prompt: body.prompt, steps: body.steps };
      },
      { body: z.object({ prompt: z.string(), steps: z.number().default(4) }) },
    );
    api.post("/tags/:id", (args) => args, {
      body: v.object({ id: v.string(), tags: v.array(v.string()) }),
    });
    const base = await listen(api);
    const post = (path: string, body: unknown) =>
      fetch(`${base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });

    const ok = await post("/generate", { prompt: "p" });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ prompt: "p", steps: 4 });

    const bad = await post("/generate", { steps: "x" });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({
      error:
        "Invalid request body (2 issues):\nbody.prompt: Invalid input: expected string, received undefined\nbody.steps: Invalid input: expected number, received string",
      issues: [
        { path: "body.prompt", message: "Invalid input: expected string, received undefined" },
        { path: "body.steps", message: "Invalid input: expected number, received string" },
      ],
    });

    const tags = await post("/tags/7", { tags: ["a", 1] });
    expect(tags.status).toBe(400);
    const answer = (await tags.json()) as { issues: { path: string }[] };
    expect(answer.issues.map((i) => i.path)).toEqual(["body.tags[1]"]);
    const good = await post("/tags/7", { tags: ["a"] });
    expect(await good.json()).toEqual({ id: "7", tags: ["a"] });
  });

  it("refuses a body option that is not a Standard Schema", () => {
    const api = new Endpoint({ name: "validated" });
    expect(() => api.post("/x", () => 1, { body: {} as never })).toThrow(
      "route POST /x: body must be a Standard Schema",
    );
  });

  it("ValidationError is exported for handlers that validate by hand", () => {
    const err = new ValidationError("input", [{ path: "input.a", message: "missing" }]);
    expect(err.message).toBe("Invalid input (1 issue):\ninput.a: missing");
  });
});
