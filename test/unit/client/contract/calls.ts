// Right calls of clients typed by the apps beside this file: this file must compile (contract.test.ts).
import { endpoint, type JobOutput, pod } from "flash-worker/client";
import { expectTypeOf } from "vitest";
import type * as lbApp from "./lb-app.js";
import type * as queueApp from "./queue-app.js";
import type queueHandler from "./queue-app.js";
import type * as streamApp from "./stream-app.js";

export async function queueCalls() {
  const ep = endpoint<typeof queueApp>("summarizer");
  // words has a default in the schema: a caller may leave it out.
  const job = await ep.runsync({ text: "a long text" });
  expectTypeOf(job).toEqualTypeOf<JobOutput<{ summary: string; words: number }>>();
  const summary: string | undefined = job.output?.summary;
  const { id } = await ep.run({ text: "x", words: 3 });
  const done = await ep.wait(id);
  expectTypeOf(done.output).toEqualTypeOf<{ summary: string; words: number } | undefined>();
  expectTypeOf((await ep.status(id)).output).toEqualTypeOf<{ summary: string; words: number } | undefined>();
  for await (const chunk of ep.stream(id))
    expectTypeOf(chunk).toEqualTypeOf<{ summary: string; words: number }>();
  const scaled = await ep.call("scale", [1, 2], 3);
  expectTypeOf(scaled).toEqualTypeOf<number[]>();
  // The handler itself as the type argument.
  const byHandler = endpoint<typeof queueHandler>("summarizer");
  expectTypeOf(byHandler.runsync).parameter(0).toEqualTypeOf<{ text: string; words?: number | undefined }>();
  return [summary, scaled];
}

export async function streamCalls() {
  const ep = endpoint<typeof streamApp>("tokens");
  const { id } = await ep.run({ count: 3 });
  for await (const chunk of ep.stream(id)) expectTypeOf(chunk).toEqualTypeOf<{ token: string }>();
  const job = await ep.runsync({ count: 2 });
  expectTypeOf(job.output).toEqualTypeOf<{ token: string }[] | undefined>();
}

export async function routeCalls() {
  const api = endpoint<typeof lbApp>("summary-api");
  const answer = await api.post("/summarize", { text: "a long text" });
  expectTypeOf(answer).toEqualTypeOf<{ summary: string; words: number }>();
  const hello = await api.get("/hello/ada", { lang: "fr" });
  expectTypeOf(hello).toEqualTypeOf<{ hello: string; lang: string }>();
  await api.get("/hello/ada");
  const renamed = await api.put("/items/42", { title: "new" });
  expectTypeOf(renamed).toEqualTypeOf<{ id: string; title: string; updated: boolean }>();
  const { body, workerId } = await api.routeAnswer("POST", "/summarize", { text: "t", words: 2 });
  expectTypeOf(body.summary).toEqualTypeOf<string>();
  await api.pin(workerId ?? "w1").post("/summarize", { text: "pinned" });
  // A Pod's app is typed the same way.
  await pod<typeof lbApp>("summary-pod").get("/hello/bob");
  return answer.summary;
}

export async function untypedCalls() {
  // Without a type argument, every call is as before: explicit types or unknown.
  const ep = endpoint("anything");
  const job = await ep.runsync<{ a: number }, { b: string }>({ a: 1 });
  expectTypeOf(job.output).toEqualTypeOf<{ b: string } | undefined>();
  expectTypeOf(await ep.post("/any", { x: 1 })).toEqualTypeOf<unknown>();
}
