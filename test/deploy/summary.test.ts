// What `flash deploy` prints for its endpoints: a queue endpoint that serves OpenAI clients (openaiCompatible(), or a
// model server's passthrough) is marked so in the manifest, and its summary gives the OpenAI base URL beside
// /runsync, as `flash dev` does (issue 44, item 11). The manifest comes from loading real entry files.
import { afterEach, describe, expect, it } from "vitest";
import { buildArtifact } from "../../src/toolkit/bundle/index.js";
import type { DeployedEntry } from "../../src/toolkit/deploy/deploy.js";
import { endpointUrl } from "../../src/toolkit/deploy/mapping.js";
import { endpointSummary } from "../../src/toolkit/deploy/summary.js";
import type { RestEndpoint } from "../../src/toolkit/rest/types.js";
import { makeProject, type Project } from "../cli/toolkit-project.js";

let project: Project | undefined;
afterEach(() => {
  project?.remove();
  project = undefined;
});

const FILES = {
  "chat/handler.ts": [
    'import { handler, openaiCompatible } from "flash-worker";',
    "export default handler(openaiCompatible({ models: () => ['m'] }));",
  ].join("\n"),
  "served/handler.ts": [
    'import { handler, server } from "flash-worker";',
    'const model = server({ command: "python3 server.py --port {port}", port: 0 });',
    "export default handler(async (job) => job.input, { server: model });",
  ].join("\n"),
  "closed/handler.ts": [
    'import { handler, server } from "flash-worker";',
    'const model = server({ command: "python3 server.py --port {port}", port: 0, openai: false });',
    "export default handler(async (job) => job.input, { server: model });",
  ].join("\n"),
  "plain/handler.ts":
    'import { handler } from "flash-worker";\nexport default handler(async (job) => job.input);',
};
const ENTRIES = Object.keys(FILES);

/** The record RunPod's REST API gives a queue endpoint: no requestUrls, so its URL is api.runpod.ai's. */
const onRunPod = (id: string) => ({ id }) as RestEndpoint;
/** The local platform's record: its own /v2/<id>. */
const onLocal = (id: string) =>
  ({ id, requestUrls: { runSync: `http://127.0.0.1:8000/v2/${id}/runsync` } }) as unknown as RestEndpoint;

describe("deploy's summary of a queue endpoint that serves OpenAI", () => {
  it("the manifest says which endpoints serve OpenAI; the summary prints their base URL, on RunPod and locally", async () => {
    project = makeProject(FILES);
    const { manifest } = await buildArtifact({ root: project.dir, entries: ENTRIES });
    expect(manifest.endpoints.map((e) => [e.id, e.openai ?? false])).toEqual([
      ["chat", true],
      ["served", true],
      ["closed", false],
      ["plain", false],
    ]);
    for (const [record, base] of [
      [onRunPod, "https://api.runpod.ai/v2"],
      [onLocal, "http://127.0.0.1:8000/v2"],
    ] as const) {
      const lines = manifest.endpoints.map((endpoint) => {
        const entry: DeployedEntry = {
          endpoint,
          id: endpoint.id,
          url: endpointUrl(record(endpoint.id), "QUEUE"),
          action: "created",
        };
        return endpointSummary(project!.dir, entry);
      });
      expect(lines[0]?.slice(0, 2)).toEqual([
        `  ${manifest.endpoints[0]?.name}  chat (created)  ${base}/chat/runsync`,
        `    OpenAI base URL: ${base}/chat/openai/v1`,
      ]);
      expect(lines[1]?.[1]).toBe(`    OpenAI base URL: ${base}/served/openai/v1`);
      for (const other of [lines[2], lines[3]]) {
        expect(other?.join("\n")).not.toContain("OpenAI");
        expect(other?.[1]).toMatch(/^ {4}curl -X POST /);
      }
    }
  });
});
