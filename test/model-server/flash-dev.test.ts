// A queue worker in front of a real model server (the FastAPI fixture shaped like vLLM) under a real `flash dev`:
// the official `openai` client through the endpoint's /openai/v1 base URL, plain and streamed; no job before the
// server is healthy; cancel during a stream reaches the server; a crash mid-job fails the job and the worker is
// replaced; a server that never becomes healthy is reported unhealthy; SIGTERM lets a stream finish. Needs dist/.
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readDeltas } from "../interop/chunks.js";
import { type FlashProcess, startFlash } from "../platform/cli.js";
import { eventually } from "../platform/helpers.js";

const TIMEOUT = 180_000;
const HANDLER = "test/fixtures/model-server/handler.ts";
let port = 18_900 + (process.pid % 50) * 2;

/** flash dev with the fixture's mode in the environment its workers inherit. */
async function dev(env: Record<string, string>): Promise<FlashProcess> {
  const saved = { ...process.env };
  Object.assign(process.env, { FIXTURE_PORT: String(port++), ...env });
  try {
    return await startFlash("dev", [HANDLER, "--port", "0", "--api-key", "ms-key", "--workers", "1,1"]);
  } finally {
    process.env = saved;
  }
}

const openai = (flash: FlashProcess) =>
  new OpenAI({
    apiKey: flash.apiKey,
    baseURL: `${flash.endpointUrl}/openai/v1`,
    maxRetries: 0,
    timeout: 60_000,
  });

const indexOf = (flash: FlashProcess, pattern: RegExp) => flash.lines.findIndex((l) => pattern.test(l));

describe("flash dev with a model server behind a queue handler", { timeout: TIMEOUT }, () => {
  const marker = join(mkdtempSync(join(tmpdir(), "flash-ms-dev-")), "disconnected");
  let flash: FlashProcess;
  let client: OpenAI;
  beforeAll(async () => {
    flash = await dev({ FIXTURE_LOAD_SECONDS: "2", FIXTURE_TOKEN_DELAY: "0.2", FIXTURE_MARKER: marker });
    client = openai(flash);
  }, TIMEOUT);
  afterAll(async () => {
    await flash?.stop();
  }, TIMEOUT);

  it("takes no job until the server's health answers 200; a job sent while it loads waits, then runs", async () => {
    const job = await flash.call("/runsync", {
      input: { messages: [{ role: "user", content: "early bird" }] },
    });
    expect(job).toMatchObject({
      status: "COMPLETED",
      output: { choices: [{ message: { content: "echo: early bird" } }] },
    });
    const ready = indexOf(flash, /\| Model server 'fixture-llm' is ready\./);
    const loading = indexOf(flash, /\| fixture-llm \| fixture: loading fixture-model \(ok\)/);
    const started = indexOf(flash, new RegExp(`\\| ${job.id} \\| Started\\.`));
    expect(loading).toBeGreaterThanOrEqual(0);
    expect(ready).toBeGreaterThan(loading);
    expect(started).toBeGreaterThan(ready);
    expect(indexOf(flash, /\| worker \| Worker \S+ started\./)).toBeGreaterThan(ready);
  });

  it("the openai client gets a plain chat completion and the model list from the server", async () => {
    const completion = await client.chat.completions.create({
      model: "fixture-model",
      messages: [{ role: "user", content: "hello there" }],
    });
    expect(completion.object).toBe("chat.completion");
    expect(completion.choices[0]?.message).toEqual({ role: "assistant", content: "echo: hello there" });
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(["fixture-model"]);
  });

  it("the openai client streams token by token", async () => {
    const stream = await client.chat.completions.create({
      model: "fixture-model",
      messages: [{ role: "user", content: "stream these words" }],
      stream: true,
    });
    const { deltas, finish } = await readDeltas(stream);
    expect(deltas).toEqual(["echo:", " stream", " these", " words"]);
    expect(finish).toBe("stop");
  });

  it("cancelling a stream aborts the upstream request: the server sees the client disconnect", async () => {
    const stream = await client.chat.completions.create({
      model: "fixture-model",
      messages: [{ role: "user", content: "a long answer that will be cut off before it ends" }],
      stream: true,
    });
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) break;
    }
    stream.controller.abort();
    await eventually(() => existsSync(marker), "the server's disconnect", 60_000);
    await flash.waitForLine(/\| fixture-llm \| client disconnected/, "the server's disconnect line");
  });

  it("SIGTERM to the worker during a stream: the stream finishes within the grace, then the server is stopped", async () => {
    const [worker, pid] = [...flash.workerPids()][0]!;
    const stream = await client.chat.completions.create({
      model: "fixture-model",
      messages: [{ role: "user", content: "finish me please" }],
      stream: true,
    });
    const deltas: string[] = [];
    for await (const chunk of stream) {
      const text = chunk.choices[0]?.delta.content;
      if (text) deltas.push(text);
      if (deltas.length === 1) process.kill(pid, "SIGTERM");
    }
    expect(deltas.join("")).toBe("echo: finish me please");
    await flash.waitForLine(
      new RegExp(`\\| ${worker} \\| worker \\| Stopping model server 'fixture-llm'\\.`),
      "the server's stop",
    );
    await flash.waitForLine(new RegExp(`Worker:${worker} \\| exited with code 0`), "the worker's clean exit");
  });
});

describe("flash dev with a model server that crashes mid-stream", { timeout: TIMEOUT }, () => {
  let flash: FlashProcess;
  beforeAll(async () => {
    flash = await dev({ FIXTURE_MODE: "crash-mid-stream", FIXTURE_LOAD_SECONDS: "0.2" });
  }, TIMEOUT);
  afterAll(async () => {
    await flash?.stop();
  }, TIMEOUT);

  it("the job fails naming the exit; the worker reports unhealthy and is replaced", async () => {
    const job = await flash.call("/runsync", {
      input: {
        openai_route: "/v1/chat/completions",
        openai_input: { messages: [{ role: "user", content: "one two three four" }], stream: true },
      },
    });
    expect(job.status).toBe("FAILED");
    expect(String(job.error)).toContain(
      "Model server 'fixture-llm' exited with code 3 while serving this job; its last lines are in the worker's log",
    );
    expect(String(job.error)).not.toContain("fixture: crashing mid-stream");
    await flash.waitForLine(/reported unhealthy: model-server/, "the unhealthy report");
    await flash.waitForLine(/Worker:\w+ \| exited with code 1/, "the worker's exit");
    await eventually(() => flash.workerPids().size >= 2, "a replacement worker", 60_000);
    // The replacement's server is healthy again: a plain request works.
    const completion = await openai(flash).chat.completions.create({
      model: "fixture-model",
      messages: [{ role: "user", content: "again" }],
    });
    expect(completion.choices[0]?.message.content).toBe("echo: again");
  });
});

describe("flash dev with a model server that exits mid-job, its last line holding the prompt", {
  timeout: TIMEOUT,
}, () => {
  let flash: FlashProcess;
  beforeAll(async () => {
    flash = await dev({ FIXTURE_LOAD_SECONDS: "0.2" });
  }, TIMEOUT);
  afterAll(async () => {
    await flash?.stop();
  }, TIMEOUT);

  const cause =
    "Model server 'fixture-llm' exited with code 3 while serving this job; its last lines are in the worker's log";
  const crash = (secret: string) => ({
    model: "fixture-crash",
    messages: [{ role: "user", content: secret }],
  });
  const logged = (secret: string) =>
    flash.lines.filter((l) => l.includes(`fixture: crashing on prompt ${secret}`));

  it("the job's error names the exit, not the server's lines; they are in the worker's log once", async () => {
    const secret = "sk-job-secret-7781";
    const job = await flash.call("/runsync", {
      input: { openai_route: "/v1/chat/completions", openai_input: crash(secret) },
    });
    expect(job.status).toBe("FAILED");
    expect(String(job.error)).toContain(cause);
    expect(JSON.stringify(job)).not.toContain("crashing on prompt");
    await flash.waitForLine(/reported unhealthy: model-server/, "the unhealthy report");
    expect(logged(secret)).toHaveLength(1);
    // Nothing the runtime logged about the crash repeats it.
    expect(flash.lines.filter((l) => l.includes("crashing on prompt"))).toHaveLength(1);
  });

  it("through /openai/v1 the caller's 500 body names the exit, not the server's lines", async () => {
    await eventually(
      async () => {
        const job = await flash.call("/runsync", { input: { messages: [{ role: "user", content: "up" }] } });
        return job.status === "COMPLETED";
      },
      "a replacement worker answering",
      60_000,
    );
    const secret = "sk-openai-secret-9913";
    const answer = await fetch(`${flash.endpointUrl}/openai/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${flash.apiKey}` },
      body: JSON.stringify(crash(secret)),
    });
    expect(answer.status).toBe(500);
    const body = await answer.text();
    expect(body).toContain(cause);
    expect(body).not.toContain("crashing on prompt");
    await eventually(() => logged(secret).length === 1, "the server's last line in the worker's log");
    expect(logged(secret)).toHaveLength(1);
  });
});

describe("flash dev with a model server that never becomes healthy", { timeout: TIMEOUT }, () => {
  let flash: FlashProcess;
  beforeAll(async () => {
    flash = await dev({ FIXTURE_MODE: "never-healthy", RUNPOD_INIT_TIMEOUT: "2" });
  }, TIMEOUT);
  afterAll(async () => {
    await flash?.stop();
  }, TIMEOUT);

  it("past RUNPOD_INIT_TIMEOUT the worker reports unhealthy with the reason and exits 1", async () => {
    const failed = await flash.waitForLine(/\| Model server failed: /, "the failure line");
    expect(failed).toContain("/health did not answer 200 within 2 s (last: it answered 503)");
    await flash.waitForLine(/reported unhealthy: model-server/, "the unhealthy report");
    await flash.waitForLine(/\| Worker is unhealthy, exiting\./, "the exit line");
    await flash.waitForLine(/Worker:\w+ \| exited with code 1/, "the worker's exit");
  });
});
