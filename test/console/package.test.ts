// The console ships: `npm pack` holds the built page (every module, the markup, the stylesheet) the server serves.
import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../process.js";

describe("console package", () => {
  it("npm pack includes every page file the build produces", () => {
    const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
      cwd: ROOT,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    const [pack] = JSON.parse(out) as [{ files: { path: string }[] }];
    const files = new Set(pack.files.map((f) => f.path));
    const sources = readdirSync(join(ROOT, "src/platform/console/page")).filter((name) =>
      name.endsWith(".ts"),
    );
    expect(sources).toContain("main.ts");
    const wanted = [
      ...sources.map((name) => `dist/platform/console/page/${name.replace(/\.ts$/, ".js")}`),
      "dist/platform/console/page/index.html",
      "dist/platform/console/page/console.css",
      "dist/platform/console/index.js",
    ];
    for (const path of wanted) expect(files.has(path), path).toBe(true);
  }, 60_000);
});
