import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { currentJob, runInJobScope } from "../../../src/job/scope.js";
import { createLogger } from "../../../src/log/index.js";

const silent = createLogger({ level: "SILENT", json: false });

/** Runs `work` as job `id`, as the job engine does. */
function asJob<T>(id: string, work: () => Promise<T>): Promise<T> {
  return runInJobScope({ id, input: {} }, new AbortController().signal, silent, work);
}

/** A promise and the function that settles it, to hold a job open until the test lets it end. */
function gate(): { opened: Promise<void>; open(): void } {
  let open = () => {};
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return { opened, open };
}

describe("the job scope", () => {
  it("names the job inside its handler, after awaits, in timers and in callbacks it scheduled", async () => {
    const seen = await asJob("j1", async () => {
      const atStart = currentJob()?.job.id;
      await nextTurn();
      const afterAwait = currentJob()?.job.id;
      const inTimer = await new Promise<string | undefined>((r) =>
        setTimeout(() => r(currentJob()?.job.id), 1),
      );
      const inThen = await Promise.resolve().then(() => currentJob()?.job.id);
      return { atStart, afterAwait, inTimer, inThen };
    });
    expect(seen).toEqual({ atStart: "j1", afterAwait: "j1", inTimer: "j1", inThen: "j1" });
  });

  it("gives concurrent jobs each their own job", async () => {
    const seen = await Promise.all(
      ["a", "b", "c"].map((id) =>
        asJob(id, async () => {
          const ids: (string | undefined)[] = [];
          for (let i = 0; i < 5; i++) {
            await nextTurn();
            ids.push(currentJob()?.job.id);
          }
          return ids;
        }),
      ),
    );
    expect(seen).toEqual([Array(5).fill("a"), Array(5).fill("b"), Array(5).fill("c")]);
  });

  it("names no job once the last job has ended, and the next job sees itself", async () => {
    expect(currentJob()).toBeUndefined();
    await asJob("first", async () => {
      await nextTurn();
      expect(currentJob()?.job.id).toBe("first");
    });
    expect(currentJob()).toBeUndefined();
    await nextTurn();
    expect(currentJob()).toBeUndefined();
    const next = await asJob("second", async () => {
      await nextTurn();
      return currentJob()?.job.id;
    });
    expect(next).toBe("second");
    expect(currentJob()).toBeUndefined();
  });

  it("keeps every running job's scope while overlapping jobs end one by one", async () => {
    const a = gate();
    const b = gate();
    const aEnded = gate();
    const seenInB: (string | undefined)[] = [];
    const jobA = asJob("a", async () => {
      await a.opened;
      return currentJob()?.job.id;
    });
    const jobB = asJob("b", async () => {
      await b.opened;
      seenInB.push(currentJob()?.job.id);
      await aEnded.opened; // job a has ended: b is now the only job running
      await nextTurn();
      seenInB.push(currentJob()?.job.id);
      return currentJob()?.job.id;
    });
    // A third job starts and ends while a and b both run.
    expect(await asJob("c", async () => currentJob()?.job.id)).toBe("c");
    b.open();
    a.open();
    expect(await jobA).toBe("a");
    aEnded.open();
    expect(await jobB).toBe("b");
    expect(seenInB).toEqual(["b", "b"]);
    expect(currentJob()).toBeUndefined();
  });

  it("starts a job from a callback scheduled after the last job ended, and it sees itself", async () => {
    await asJob("earlier", async () => undefined);
    const later = await new Promise<string | undefined>((resolve, reject) => {
      setTimeout(() => {
        asJob("later", async () => {
          await nextTurn();
          return currentJob()?.job.id;
        }).then(resolve, reject);
      }, 1);
    });
    expect(later).toBe("later");
  });

  it("ends the scope when the work throws, as when it returns", async () => {
    await expect(
      asJob("fails", async () => {
        await nextTurn();
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect(currentJob()).toBeUndefined();
    expect(await asJob("after", async () => currentJob()?.job.id)).toBe("after");
  });

  it("never shows code a finished handler left running another job's scope", async () => {
    const fired = gate();
    const bRunning = gate();
    let seenLate: string | undefined = "not yet";
    await asJob("a", async () => {
      // Left running: fires once job b has started, after job a has ended.
      void bRunning.opened.then(() =>
        setTimeout(() => {
          seenLate = currentJob()?.job.id;
          fired.open();
        }, 1),
      );
    });
    const b = asJob("b", async () => {
      bRunning.open();
      await fired.opened;
      return currentJob()?.job.id;
    });
    expect(await b).toBe("b");
    expect(seenLate).toBe("a");
  });

  // Node before 24 tracks the store with async hooks, switched off while no job runs (Node 24's frames need none).
  it.skipIf(Number(process.versions.node.split(".")[0]) >= 24)(
    "shows code a finished handler left running no job once no job is running (Node 20, 22)",
    async () => {
      const fired = gate();
      const ended = gate();
      let seenLate: string | undefined = "not yet";
      await asJob("a", async () => {
        void ended.opened.then(() =>
          setTimeout(() => {
            seenLate = currentJob()?.job.id;
            fired.open();
          }, 1),
        );
      });
      ended.open();
      await fired.opened;
      expect(seenLate).toBeUndefined();
    },
  );

  it("refuses an ended job's folder to code the handler left running", async () => {
    let scope: ReturnType<typeof currentJob>;
    await asJob("gone", async () => {
      scope = currentJob();
    });
    await expect(scope!.folder()).rejects.toThrow("job gone has ended: its files folder is gone");
  });
});
