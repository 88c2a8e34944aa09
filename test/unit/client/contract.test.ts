// Clients typed by the app (src/client/contract.ts): the right calls in contract/calls.ts compile, and each
// wrong call below fails to compile with the error TypeScript gives for it, on its own line.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { beforeAll, describe, expect, it } from "vitest";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../../..");
const HERE = join(ROOT, "test/unit/client/contract");
const WRONG_FILE = join(HERE, "wrong-calls.ts");

// Each case: one line of code, and the TypeScript error code it must raise there.
const WRONG: { name: string; line: string; code: number }[] = [
  { name: "wrong input field", line: `await ep.runsync({ txt: "a" });`, code: 2561 },
  { name: "wrong route", line: `await api.post("/summarise", { text: "a" });`, code: 2345 },
  { name: "wrong method", line: `await api.post("/hello/ada", {});`, code: 2345 },
  { name: "wrong body", line: `await api.post("/summarize", { text: 42 });`, code: 2322 },
  { name: "a field the output lacks", line: `(await ep.runsync({ text: "a" })).output?.title;`, code: 2339 },
  { name: "a field a route's answer lacks", line: `(await api.get("/hello/x")).goodbye;`, code: 2339 },
  { name: "a body missing a required field", line: `await api.put("/items/1", {});`, code: 2345 },
  { name: "a remote function's wrong argument", line: `await ep.call("scale", ["a"], 3);`, code: 2322 },
  {
    name: "a chunk field the stream lacks",
    line: `for await (const c of tokens.stream("j")) c.text;`,
    code: 2339,
  },
  { name: "a route on a queue endpoint", line: `await ep.post("/summarize", { text: "a" });`, code: 2345 },
];

const HEADER = [
  `import { endpoint } from "flash-worker/client";`,
  `import type * as lbApp from "./lb-app.js";`,
  `import type * as queueApp from "./queue-app.js";`,
  `import type * as streamApp from "./stream-app.js";`,
  `const ep = endpoint<typeof queueApp>("summarizer");`,
  `const api = endpoint<typeof lbApp>("summary-api");`,
  `const tokens = endpoint<typeof streamApp>("tokens");`,
  `export async function wrong() {`,
];
const wrongSource = [...HEADER, ...WRONG.map((c) => `  ${c.line}`), "}", ""].join("\n");

let diagnostics: readonly ts.Diagnostic[] = [];

beforeAll(() => {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, "tsconfig.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      },
    },
  );
  if (!config) throw new Error("tsconfig.json could not be read");
  const host = ts.createCompilerHost(config.options);
  // The wrong calls live only in memory: the project's own type check must stay clean.
  const read = host.readFile.bind(host);
  const exists = host.fileExists.bind(host);
  const source = host.getSourceFile.bind(host);
  host.readFile = (f) => (f === WRONG_FILE ? wrongSource : read(f));
  host.fileExists = (f) => f === WRONG_FILE || exists(f);
  host.getSourceFile = (f, language, ...rest) =>
    f === WRONG_FILE ? ts.createSourceFile(f, wrongSource, language) : source(f, language, ...rest);
  const program = ts.createProgram(
    [join(HERE, "calls.ts"), WRONG_FILE],
    { ...config.options, noEmit: true },
    host,
  );
  diagnostics = ts.getPreEmitDiagnostics(program);
}, 120_000);

function where(d: ts.Diagnostic): string {
  const file = d.file?.fileName ?? "?";
  const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0;
  return `${file.slice(ROOT.length + 1)}:${line} TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`;
}

describe("a client typed by the app", () => {
  it("compiles the right calls (queue, stream, routes, remote function, untyped)", () => {
    expect(readFileSync(join(HERE, "calls.ts"), "utf8")).toContain("endpoint<typeof queueApp>");
    const inCalls = diagnostics.filter((d) => d.file?.fileName !== WRONG_FILE).map(where);
    expect(inCalls).toEqual([]);
  });

  it.each(WRONG.map((c, i) => ({ ...c, lineNo: HEADER.length + i + 1 })))(
    "refuses $name (TS$code on its line)",
    ({ lineNo, code }) => {
      const onLine = diagnostics
        .filter((d) => d.file?.fileName === WRONG_FILE)
        .filter((d) => d.file!.getLineAndCharacterOfPosition(d.start!).line + 1 === lineNo);
      expect(onLine.map((d) => d.code)).toEqual([code]);
    },
  );

  it("raises no error but the listed ones", () => {
    const lines = new Set(WRONG.map((_, i) => HEADER.length + i + 1));
    const stray = diagnostics
      .filter((d) => d.file?.fileName === WRONG_FILE)
      .filter((d) => !lines.has(d.file!.getLineAndCharacterOfPosition(d.start!).line + 1));
    expect(stray.map(where)).toEqual([]);
  });
});
