// One error shape: every class carries a stable code and is recognised by code, even from another copy of the module.
import { describe, expect, it, vi } from "vitest";
import { EndpointConfigError } from "../../../src/app/settings.js";
import {
  PayloadTooLargeError as ClientPayloadTooLarge,
  EndpointHttpError,
  ExecutionTimeoutError,
} from "../../../src/client/index.js";
import {
  type ErrorCode,
  type FlashError,
  isFlashError,
  PayloadTooLargeError,
} from "../../../src/flash-error.js";
import { ConfigError } from "../../../src/options/index.js";
import {
  PayloadTooLargeError as PayloadPayloadTooLarge,
  PickleError,
  PickleGlobalError,
} from "../../../src/payload/errors.js";
import { HttpError } from "../../../src/platform/api/http.js";
import { PlatformHttpError } from "../../../src/runtime/queue/client.js";
import { ApiError } from "../../../src/toolkit/rest/client.js";

describe("FlashError", () => {
  it("every class has its own stable code and keeps its name", () => {
    const cases: Array<[FlashError, ErrorCode, string]> = [
      [new ConfigError("x"), "CONFIG_INVALID", "ConfigError"],
      [new EndpointConfigError("x"), "ENDPOINT_CONFIG_INVALID", "EndpointConfigError"],
      [new PickleError("x"), "PICKLE_INVALID", "PickleError"],
      [new PickleGlobalError("os", "system", "not allowed"), "PICKLE_GLOBAL_REFUSED", "PickleGlobalError"],
      [new ExecutionTimeoutError("ep", 5), "EXECUTION_TIMEOUT", "ExecutionTimeoutError"],
      [new HttpError(404, "gone"), "HTTP_STATUS", "HttpError"],
    ];
    for (const [err, code, name] of cases) {
      expect(err).toBeInstanceOf(Error);
      expect(err.code).toBe(code);
      expect(err.name).toBe(name);
      expect(isFlashError(err)).toBe(true);
      expect(isFlashError(err, code)).toBe(true);
      expect(isFlashError(err, "JOB_FAILED")).toBe(false);
    }
  });

  it("a subclass answers to its own code only", () => {
    const err = new PickleGlobalError("os", "system", "not allowed");
    expect(err).toBeInstanceOf(PickleError);
    expect(isFlashError(err, "PICKLE_INVALID")).toBe(false);
    expect(isFlashError(err, "PICKLE_INVALID", "PICKLE_GLOBAL_REFUSED")).toBe(true);
  });

  it("recognises an error from another copy of the package by its brand, and nothing else", async () => {
    // A fresh module instance stands in for a second copy of flash-worker loaded by the user's file.
    vi.resetModules();
    const copy = await import("../../../src/flash-error.js");
    expect(copy.PayloadTooLargeError).not.toBe(PayloadTooLargeError);
    const foreign = new copy.PayloadTooLargeError(2, 1);
    expect(foreign instanceof PayloadTooLargeError).toBe(false);
    expect(isFlashError(foreign, "PAYLOAD_TOO_LARGE")).toBe(true);
    const lookalike = Object.assign(new Error("x"), { code: "PAYLOAD_TOO_LARGE" });
    expect(isFlashError(lookalike)).toBe(false);
    expect(isFlashError(null)).toBe(false);
    expect(isFlashError("PAYLOAD_TOO_LARGE")).toBe(false);
  });

  it("one PayloadTooLargeError for the codec and the client, with the interface document's words", () => {
    expect(ClientPayloadTooLarge).toBe(PayloadTooLargeError);
    expect(PayloadPayloadTooLarge).toBe(PayloadTooLargeError);
    const mb = 1024 * 1024;
    expect(new PayloadTooLargeError(12 * mb, 10 * mb).message).toBe(
      "Payload size 12.0 MB exceeds limit of 10.0 MB",
    );
    const client = new PayloadTooLargeError(11 * mb, 10 * mb, "sd");
    expect(client.endpoint).toBe("sd");
    expect(client.message).toMatch(
      /^Payload size exceeds limit of 10\.0 MB: the request to sd is 11\.0 MB\./,
    );
  });

  it("HTTP status errors name their fields alike: status, statusText, body, url", () => {
    const errors = [
      new PlatformHttpError(503, "Service Unavailable", '{"error":"busy"}', "http://p/done"),
      new EndpointHttpError("ep", 503, "Service Unavailable", '{"error":"busy"}', "http://p/done"),
      new ApiError(503, "Service Unavailable", '{"error":"busy"}', "http://p/done", "GET", "/done", {
        title: "Service Unavailable",
        status: 503,
        detail: "busy",
      }),
    ];
    for (const err of errors) {
      expect({ status: err.status, statusText: err.statusText, body: err.body, url: err.url }).toEqual({
        status: 503,
        statusText: "Service Unavailable",
        body: '{"error":"busy"}',
        url: "http://p/done",
      });
    }
  });
});
