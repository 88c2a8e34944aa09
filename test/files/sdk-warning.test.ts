// upload() in a job through the real `flash run`: the AWS SDK's NodeVersionSupportWarning (Node < 22) stays out
// of the job's logs, while the app's own warnings still show.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flashRun, ROOT } from "../process.js";
import { type LocalS3, startS3 } from "./s3rver.js";

let s3: LocalS3;
beforeAll(async () => {
  s3 = await startS3(["results"]);
});
afterAll(() => s3.close());

describe("the AWS SDK's NodeVersionSupportWarning", () => {
  it("is not in the logs of a job that uploads; another warning is", async () => {
    const dir = mkdtempSync(join(ROOT, "test-artifacts-"));
    try {
      writeFileSync(
        join(dir, "handler.mjs"),
        [
          'import { handler } from "flash-worker";',
          'import { upload } from "flash-worker/files";',
          "export default handler(async () => {",
          '  process.emitWarning("the app\'s own warning");',
          '  const { key } = await upload(new TextEncoder().encode("hi"), { key: "w.txt" });',
          "  return { key };",
          "});",
          "",
        ].join("\n"),
      );
      const { code, stdout, stderr } = await flashRun(
        ["run", "handler.mjs", "--test-input", '{"input": {}}'],
        {
          BUCKET_ENDPOINT_URL: `${s3.url}/results`,
          BUCKET_ACCESS_KEY_ID: "S3RVER",
          BUCKET_SECRET_ACCESS_KEY: "S3RVER",
        },
        dir,
      );
      expect(code, stderr).toBe(0);
      expect(JSON.parse(stdout)).toStrictEqual({ output: { key: "w.txt" } });
      expect(stderr).toContain("Warning: the app's own warning");
      expect(stderr).not.toContain("NodeVersionSupportWarning");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
