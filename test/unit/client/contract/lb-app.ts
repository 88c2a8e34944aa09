// A load-balanced worker for the typed-client tests: three routes (zod, valibot, plain types).
import { Endpoint } from "flash-worker";
import * as v from "valibot";
import { z } from "zod";

const api = new Endpoint({ name: "summary-api" });

export const summarize = api.post(
  "/summarize",
  async ({ text, words }) => ({ summary: text.slice(0, words), words }),
  { body: z.object({ text: z.string(), words: z.number().int().default(20) }) },
);

export const hello = api.get("/hello/:name", ({ name, lang }: { name: string; lang?: string }) => ({
  hello: name,
  lang: lang ?? "en",
}));

export const rename = api.put("/items/{id}", ({ id, title }) => ({ id, title, updated: true }), {
  body: v.object({ id: v.string(), title: v.pipe(v.string(), v.minLength(1)) }),
});

export default api;
