import { describe, expect, it } from "vitest";
import { ConfigError, integer, readOptions, repeated } from "../../../src/options/index.js";

const table = {
  port: repeated(["--port", "-p"], integer(1, 65535), "N", "a port, once per port"),
  name: { flags: ["--name"], env: ["NAME"], parse: (raw: string) => raw },
};

describe("a repeated option", () => {
  it("collects every value in order, from either spelling and either form", () => {
    const read = readOptions(table, ["--port", "80", "x", "-p=22", "--port=9000"], {}, { command: "t" });
    expect(read.values.port).toStrictEqual([80, 22, 9000]);
    expect(read.sources.port).toBe("flag");
    expect(read.rest).toStrictEqual(["x"]);
  });

  it("is [] when absent, and a single flag still gives a list", () => {
    expect(readOptions(table, [], {}).values.port).toStrictEqual([]);
    expect(readOptions(table, ["--port", "1"], {}).values.port).toStrictEqual([1]);
  });

  it("checks each value with its parser, naming the flag", () => {
    expect(() => readOptions(table, ["--port", "80", "--port", "0"], {}, { command: "t" })).toThrow(
      new ConfigError('Invalid value "0" in flag --port: expected a whole number from 1 to 65535'),
    );
  });

  it("leaves single options as they were: the last flag wins", () => {
    expect(readOptions(table, ["--name", "a", "--name", "b"], {}).values.name).toBe("b");
  });
});
