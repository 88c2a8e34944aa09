// What crosses a relay's hop: forwardRawHeaders keeps every end-to-end header as it came (case, order, repeats)
// and drops the hop-by-hop ones and Host, whatever their case.
import { describe, expect, it } from "vitest";
import { forwardHeaders, forwardRawHeaders } from "../../../src/http/proxy.js";

describe("forwardRawHeaders", () => {
  it("keeps end-to-end headers in their case, order and repeats; drops the hop's in any case", () => {
    const raw = [
      "Content-Type",
      "application/json",
      "CONNECTION",
      "keep-alive",
      "X-Dup",
      "a",
      "Keep-Alive",
      "timeout=5",
      "x-dup",
      "b",
      "Transfer-Encoding",
      "chunked",
      "Host",
      "example",
      "TE",
      "trailers",
      "Set-Cookie",
      "a=1",
      "Proxy-Authorization",
      "Basic x",
      "Upgrade",
      "h2c",
      "Trailer",
      "x",
      "Proxy-Connection",
      "close",
      "Proxy-Authenticate",
      "Basic",
      "Set-Cookie",
      "b=2",
    ];
    expect(forwardRawHeaders(raw)).toEqual([
      "Content-Type",
      "application/json",
      "X-Dup",
      "a",
      "x-dup",
      "b",
      "Set-Cookie",
      "a=1",
      "Set-Cookie",
      "b=2",
    ]);
  });

  it("drops the same names forwardHeaders does", () => {
    const names = [
      "connection",
      "keep-alive",
      "te",
      "trailer",
      "transfer-encoding",
      "upgrade",
      "host",
      "x-a",
      "tes",
    ];
    const raw = names.flatMap((name) => [name, "v"]);
    const kept = forwardRawHeaders(raw).filter((_, i) => i % 2 === 0);
    expect(kept).toEqual(Object.keys(forwardHeaders(Object.fromEntries(names.map((n) => [n, "v"])))));
  });
});
