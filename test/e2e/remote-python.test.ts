// Python's cloudpickle client calls remote functions in .ts and .mjs apps loaded every way the runtime loads
// them (tsx on Node 20, Node's type stripping, the tsx fallback, FLASH_USE_TSX; Node 24 from FLASH_TEST_NODES),
// and gets Python types back: no marker is lost to a second copy of flash-worker, floats stay floats where declared.
import { execFile, spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Platform, startPlatform } from "../../src/platform/index.js";
import { FLASH, ROOT } from "../process.js";
import { findPython } from "../unit/payload/python.js";

const python = findPython();
const nodes = [process.execPath, ...(process.env.FLASH_TEST_NODES ?? "").split(":").filter(Boolean)];

/** Node's major version and whether it strips types itself. */
function nodeInfo(node: string): { major: number; strips: boolean } {
  const r = spawnSync(
    node,
    ["-p", "process.versions.node.split('.')[0] + ' ' + !!process.features.typescript"],
    {
      encoding: "utf8",
    },
  );
  const [major, strips] = r.stdout.trim().split(" ");
  return { major: Number(major), strips: strips === "true" };
}

interface Seen {
  status: string;
  success: boolean | null;
  stdout: string | null;
  repr?: string;
  error?: string;
}

interface Variant {
  name: string;
  node: string;
  file: string;
  env?: Record<string, string>;
}

const variants: Variant[] = [];
for (const node of nodes) {
  const { major, strips } = nodeInfo(node);
  const on = `Node ${major}`;
  variants.push({ name: `${on}: app.mjs (plain import)`, node, file: "test/fixtures/remote/app.mjs" });
  variants.push({
    name: `${on}: app.ts (${strips ? "type stripping" : "tsx"})`,
    node,
    file: "test/fixtures/remote/app.ts",
  });
  variants.push({
    name: `${on}: fallback.ts (tsx fallback)`,
    node,
    file: "test/fixtures/remote/fallback.ts",
  });
  if (strips)
    variants.push({
      name: `${on}: app.ts with FLASH_USE_TSX=1`,
      node,
      file: "test/fixtures/remote/app.ts",
      env: { FLASH_USE_TSX: "1" },
    });
}

describe.runIf(python.path !== null).each(variants)("$name", ({ node, file, env }) => {
  let platform: Platform;

  beforeAll(async () => {
    platform = await startPlatform({
      endpoints: [{ id: "remote", file, workers: [1, 1], ...(env ? { env } : {}) }],
      workerCommand: (path) => [node, FLASH, "start", path],
    });
  });

  afterAll(async () => {
    await platform?.close();
  });

  type Call = { args?: string[]; kwargs?: Record<string, string> } & (
    | { fn: string }
    | { class: string; ctor?: string[]; method: string }
  );
  const calls = (specs: Call[]) =>
    new Promise<Seen[]>((resolve, reject) => {
      execFile(
        python.path!,
        ["test/fixtures/remote/client.py", JSON.stringify(specs)],
        {
          cwd: ROOT,
          timeout: 120_000,
          env: {
            ...process.env,
            FLASH_URL: platform.url,
            FLASH_API_KEY: platform.apiKey,
            FLASH_ENDPOINT: "remote",
          },
        },
        (err, stdout, stderr) => {
          if (err) reject(new Error(`${err.message}\n${stderr}`));
          else
            resolve(
              stdout
                .trim()
                .split("\n")
                .map((l) => JSON.parse(l) as Seen),
            );
        },
      );
    });

  it("Python gets float, tuple, bytearray and frozenset from the app's own PyFloat, tuple(), bytearray(), frozenset()", async () => {
    const [made, echoed] = await calls([
      { fn: "make" },
      { fn: "echo", args: ["[1.0, (1, 2), bytearray(b'\\x01'), frozenset({1}), {(1, 2): 2.0}]"] },
    ]);
    expect(made?.repr).toBe("[3.0, (1, 2), bytearray(b'\\x01\\x02'), frozenset({1})]");
    expect(echoed?.repr).toBe("[1.0, (1, 2), bytearray(b'\\x01'), frozenset({1}), {(1, 2): 2.0}]");
  });

  it("arguments arrive as plain numbers; declared float returns go back as float", async () => {
    const [kind, scaled, added, addedFloat, wrong] = await calls([
      { fn: "kind", args: ["1.0"] },
      { fn: "scale", args: ["[1, 2]", "0.5"] },
      { fn: "add", args: ["1", "2"] },
      { fn: "add", args: ["1.0", "2"] },
      { fn: "scale", args: ["[1, 'x']", "2"] },
    ]);
    expect(kind?.repr).toBe("'number'");
    expect(scaled?.repr).toBe("[0.5, 1.0]");
    expect(added?.repr).toBe("3");
    // undeclared: JS has one number type, so a whole result is an int (the documented default)
    expect(addedFloat?.repr).toBe("3");
    expect(wrong?.success).toBe(false);
    expect(wrong?.error).toBe("scale() argument 'xs'[1] must be float, not str");
  });

  it("Python-shaped errors: a missing argument, a return value that cannot be pickled", async () => {
    const [missing, date] = await calls([{ fn: "add", args: ["1"] }, { fn: "when" }]);
    expect(missing?.success).toBe(false);
    expect(missing?.error).toBe("add() missing 1 required positional argument: 'b'");
    expect(date?.success).toBe(false);
    expect(date?.error?.split("\n")[0]).toBe(
      "Failed to serialize result: cannot pickle a Date: send date.toISOString() (Python: datetime.fromisoformat) or date.getTime() / 1000 (a timestamp)",
    );
  });

  it("stdout carries what the function wrote during the call", async () => {
    const [shout] = await calls([{ fn: "shout", args: ["'hi'"] }]);
    expect(shout?.repr).toBe("'HI'");
    expect(shout?.stdout).toBe("saying hi\nto stderr\n");
  });

  it.runIf(file.endsWith("fallback.ts"))("class mode: a class with a parameter property", async () => {
    const [shown] = await calls([{ class: "Label", ctor: ["'a'"], method: "show" }]);
    expect(shown?.repr).toBe("'<a>'");
  });
});

describe.runIf(python.path === null)("remote functions from Python", () => {
  it("needs Debian's python3 with cloudpickle", () => {
    throw new Error(python.reason);
  });
});
