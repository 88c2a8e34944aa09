// Stacks leave the process without source text: a frame in a module run from a data: URL is cut.
import { describe, expect, it } from "vitest";
import { stackText } from "../../../src/log/stack.js";

describe("stackText", () => {
  it("cuts data: URL frames to their type and position, named or not, and keeps every other frame", () => {
    const source = encodeURIComponent('const SECRET = "do-not-leak";\n(() => { throw new Error("x") })();');
    const err = new Error("boom");
    err.stack = [
      "Error: boom (see data:text/plain,kept-in-the-message)",
      `    at data:text/javascript,${source}:2:22`,
      `    at run (data:text/javascript;base64,${Buffer.from(source).toString("base64")}:7:3)`,
      "    at runHandler (file:///app/node_modules/flash-worker/dist/job/execute.js:95:23)",
    ].join("\n");
    expect(stackText(err, "fallback")).toBe(
      [
        "Error: boom (see data:text/plain,kept-in-the-message)",
        "    at data:text/javascript,…:2:22",
        "    at run (data:text/javascript;base64,…:7:3)",
        "    at runHandler (file:///app/node_modules/flash-worker/dist/job/execute.js:95:23)",
      ].join("\n"),
    );
  });

  it("answers the fallback for what has no stack", () => {
    expect(stackText("a string", "Error: a string")).toBe("Error: a string");
    const bare = new Error("x");
    bare.stack = "";
    expect(stackText(bare, "none")).toBe("none");
  });
});
