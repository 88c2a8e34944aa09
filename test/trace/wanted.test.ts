// Which environments turn tracing on: an OTLP endpoint variable, unless OTEL_SDK_DISABLED says no.
import { describe, expect, it } from "vitest";
import { tracing, tracingWanted } from "../../src/trace/index.js";

describe("tracingWanted", () => {
  it("is on with either endpoint variable, off without one, blank, or with OTEL_SDK_DISABLED=true", () => {
    expect(tracingWanted({})).toBe(false);
    expect(tracingWanted({ OTEL_SERVICE_NAME: "x", OTEL_TRACES_SAMPLER: "always_on" })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "  " })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces" })).toBe(
      true,
    );
    expect(
      tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "TRUE" }),
    ).toBe(false);
    expect(
      tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_SDK_DISABLED: "false" }),
    ).toBe(true);
  });

  it("leaves the hooks empty until startTracing() runs", () => {
    expect(tracing).toBeUndefined();
  });
});
