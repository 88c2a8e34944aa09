import { describe, expect, it } from "vitest";
import type { ProtocolConfig } from "../../../../src/runtime/config/options.js";
import { appendQuery, platformUrls } from "../../../../src/runtime/queue/urls.js";

const platform = (over: Partial<ProtocolConfig> = {}): ProtocolConfig => ({
  getJobUrl: "https://api.runpod.ai/v2/EP/job-take/$ID?gpu=X",
  postOutputUrl: "https://api.runpod.ai/v2/EP/job-done/$RUNPOD_POD_ID/$ID?gpu=X",
  postStreamUrl: "https://api.runpod.ai/v2/EP/job-stream/$RUNPOD_POD_ID/$ID?gpu=X",
  pingUrl: "https://api.runpod.ai/v2/EP/ping/$RUNPOD_POD_ID?gpu=X",
  pingIntervalMs: 10_000,
  workerId: "w1",
  workerIdFromEnv: true,
  hostname: "h",
  apiKey: "K",
  ...over,
});

describe("platform URLs (docs/protocol.md §2.1, §15)", () => {
  const urls = platformUrls(platform());
  it("builds every URL of §15", () => {
    expect(urls.take(1, false)).toBe("https://api.runpod.ai/v2/EP/job-take/w1?gpu=X&job_in_progress=0");
    expect(urls.take(2, true)).toBe(
      "https://api.runpod.ai/v2/EP/job-take-batch/w1?gpu=X&batch_size=2&job_in_progress=1",
    );
    expect(urls.stop).toBe("https://api.runpod.ai/v2/EP/job-stop/w1?gpu=X");
    expect(urls.done("j1-e1", false)).toBe(
      "https://api.runpod.ai/v2/EP/job-done/w1/j1-e1?gpu=X&isStream=false",
    );
    expect(urls.done("j4-e1", true)).toBe(
      "https://api.runpod.ai/v2/EP/job-done/w1/j4-e1?gpu=X&isStream=true",
    );
    expect(urls.stream("j4-e1")).toBe("https://api.runpod.ai/v2/EP/job-stream/w1/j4-e1?gpu=X&isStream=false");
    expect(urls.ping(["j1-e1", "j2-e1"], "1.2.3")).toBe(
      "https://api.runpod.ai/v2/EP/ping/w1?gpu=X&job_id=j1-e1%2Cj2-e1&runpod_version=1.2.3",
    );
    expect(urls.ping([], "1.2.3")).toBe("https://api.runpod.ai/v2/EP/ping/w1?gpu=X&runpod_version=1.2.3");
  });

  it("job-take substitutes only $ID; the others $RUNPOD_POD_ID then $ID", () => {
    const u = platformUrls(
      platform({
        getJobUrl: "http://p/job-take/$ID/$RUNPOD_POD_ID?gpu=X",
        postOutputUrl: "http://p/$RUNPOD_POD_ID/$ID/$ID",
      }),
    );
    expect(u.take(1, false)).toBe("http://p/job-take/w1/$RUNPOD_POD_ID?gpu=X&job_in_progress=0");
    expect(u.done("j", false)).toBe("http://p/w1/j/j?isStream=false");
  });

  it("keeps the template's own query bytes and encodes job ids in paths", () => {
    const u = platformUrls(platform({ postOutputUrl: "http://p/done/$ID?gpu=NVIDIA+GeForce+RTX+4090" }));
    expect(u.done("a/b?c", false)).toBe("http://p/done/a%2Fb%3Fc?gpu=NVIDIA+GeForce+RTX+4090&isStream=false");
  });

  it("turns the stop channel off when there is no /job-take/ segment", () => {
    expect(platformUrls(platform({ getJobUrl: "http://p/take/$ID" })).stop).toBeUndefined();
  });

  it("appendQuery joins with ? or & as the URL needs", () => {
    expect(appendQuery("http://p/x", { a: 1 })).toBe("http://p/x?a=1");
    expect(appendQuery("http://p/x?", { a: 1 })).toBe("http://p/x?a=1");
    expect(appendQuery("http://p/x?g=1", { a: "b c" })).toBe("http://p/x?g=1&a=b%20c");
    expect(appendQuery("http://p/x#frag", { a: 1 })).toBe("http://p/x?a=1#frag");
    expect(appendQuery("http://p/x", { a: undefined })).toBe("http://p/x");
  });
});
