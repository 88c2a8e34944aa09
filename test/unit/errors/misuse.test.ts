// A wrong argument to a public call is a FlashError with a code, its message unchanged (messages are API).
import { describe, expect, it } from "vitest";
import { EndpointClient } from "../../../src/client/index.js";
import { type ErrorCode, isFlashError } from "../../../src/flash-error.js";
import { fitnessCheck, handler, remote } from "../../../src/index.js";
import { lenientB64decode } from "../../../src/payload/base64.js";

/** What `call` threw: its code and message; fails when it returned or threw anything but a FlashError. */
function thrown(call: () => unknown): { code: ErrorCode; message: string } {
  try {
    call();
  } catch (err) {
    if (!isFlashError(err)) throw new Error(`not a FlashError: ${String(err)}`);
    return { code: err.code, message: err.message };
  }
  throw new Error("nothing was thrown");
}

describe("misuse of a public call", () => {
  it("a wrong argument is ARGUMENT_INVALID", () => {
    expect(thrown(() => handler(42 as never))).toEqual({
      code: "ARGUMENT_INVALID",
      message: "handler(fn): fn must be a function, got number",
    });
    expect(thrown(() => remote("", () => 1))).toEqual({
      code: "ARGUMENT_INVALID",
      message: "remote(name, fn): name must be a non-empty string",
    });
    expect(thrown(() => remote("typed", (x: unknown) => x, { params: ["x"], types: { y: "int" } }))).toEqual({
      code: "ARGUMENT_INVALID",
      message: `remote("typed"): types names the parameter 'y', which params does not list (params: ["x"])`,
    });
    expect(thrown(() => fitnessCheck("", () => undefined))).toEqual({
      code: "ARGUMENT_INVALID",
      message: "fitnessCheck(name, fn): name must be a non-empty string",
    });
    expect(thrown(() => new EndpointClient({}))).toEqual({
      code: "ARGUMENT_INVALID",
      message: "EndpointClient needs an endpoint id, url or name, or a Pod's name",
    });
  });

  it("a name registered twice is NAME_TAKEN", () => {
    fitnessCheck("twice", () => undefined);
    expect(thrown(() => fitnessCheck("twice", () => undefined))).toEqual({
      code: "NAME_TAKEN",
      message: `fitnessCheck("twice") is already registered`,
    });
  });

  it("base64 Python would refuse is SERIALIZATION_FAILED with binascii's words", () => {
    expect(thrown(() => lenientB64decode("abc"))).toEqual({
      code: "SERIALIZATION_FAILED",
      message: "Incorrect padding",
    });
  });
});
