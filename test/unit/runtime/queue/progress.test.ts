// ProgressSender: updates go out one at a time and in order, the latest waiting one wins, none after close.
import { describe, expect, it } from "vitest";
import { createLogger } from "../../../../src/log/index.js";
import type { PlatformClient } from "../../../../src/runtime/queue/client.js";
import { ProgressSender } from "../../../../src/runtime/queue/progress.js";

/** A client whose progress posts stay open until the test releases them. */
function heldClient() {
  const sent: unknown[] = [];
  const releases: Array<() => void> = [];
  const client = {
    progress: (_jobId: string, output: unknown) => {
      sent.push(output);
      return new Promise<void>((resolve) => releases.push(resolve));
    },
  } as unknown as PlatformClient;
  const releaseNext = async () => {
    releases.shift()?.();
    await new Promise((r) => setImmediate(r));
  };
  return { client, sent, releaseNext };
}

const quiet = () => createLogger({ level: "ERROR", json: false, destination: { write: () => {} } });

describe("ProgressSender", () => {
  it("sends one at a time; while one is in flight the latest update replaces those waiting", async () => {
    const { client, sent, releaseNext } = heldClient();
    const sender = new ProgressSender(client, "j", quiet());
    sender.send(1);
    sender.send(2);
    sender.send(3);
    expect(sent).toEqual([1]);
    await releaseNext();
    expect(sent).toEqual([1, 3]);
    await releaseNext();
    expect(sent).toEqual([1, 3]);
  });

  it("close drops what is waiting, waits for the post in flight, and refuses later updates", async () => {
    const { client, sent, releaseNext } = heldClient();
    const sender = new ProgressSender(client, "j", quiet());
    sender.send("first");
    sender.send("waiting");
    const closed = sender.close();
    let done = false;
    void closed.then(() => {
      done = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(done).toBe(false);
    await releaseNext();
    await closed;
    sender.send("after");
    expect(sent).toEqual(["first"]);
  });

  it("drops an update that is not JSON-safe, with a warning", async () => {
    const { client, sent } = heldClient();
    const lines: string[] = [];
    const log = createLogger({
      level: "DEBUG",
      json: false,
      destination: { write: (l: string) => lines.push(l) },
    });
    new ProgressSender(client, "j", log).send({ n: 10n });
    expect(sent).toEqual([]);
    expect(lines.some((l) => l.includes("Progress update cannot be sent as JSON"))).toBe(true);
  });
});
