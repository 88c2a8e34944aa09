// The heartbeat's shared job-id board: what is written is read back whole; a long list moves to a larger board.
import { describe, expect, it } from "vitest";
import { JobBoard } from "../../../../src/runtime/queue/job-board.js";

describe("JobBoard", () => {
  it("reads back the ids last written, in order, including none", () => {
    const board = new JobBoard();
    expect(board.read()).toEqual([]);
    board.write(["a-1", "b-2"]);
    expect(board.read()).toEqual(["a-1", "b-2"]);
    board.write(new Map([["ü-ß-3", 1]]).keys());
    expect(board.read()).toEqual(["ü-ß-3"]);
    board.write([]);
    expect(board.read()).toEqual([]);
  });

  it("ids holding a line break, a comma, a quote or a lone surrogate read back as they were written", () => {
    const board = new JobBoard();
    const ids = ["a\nb", "c,d", "e\r\nf", 'g"h\\', "i\ud800j", "", "k"];
    board.write(ids);
    expect(board.read()).toStrictEqual(ids);
    expect(JobBoard.grown(ids).read()).toStrictEqual(ids);
  });

  it("a second view of the same memory (as the heartbeat thread holds) sees each write", () => {
    const writer = new JobBoard();
    const reader = new JobBoard(writer.buffer);
    writer.write(["x"]);
    expect(reader.read()).toEqual(["x"]);
    writer.write(["y", "z"]);
    expect(reader.read()).toEqual(["y", "z"]);
  });

  it("refuses a list it has no room for and leaves its contents; a grown board holds it", () => {
    const board = new JobBoard();
    board.write(["kept"]);
    const many = Array.from({ length: 2000 }, (_, i) => `job-${i}-${"e".repeat(20)}`);
    expect(board.write(many)).toBe(false);
    expect(board.read()).toEqual(["kept"]);
    const grown = JobBoard.grown(many);
    expect(grown.read()).toEqual(many);
    expect(grown.buffer.byteLength).toBeGreaterThan(board.buffer.byteLength);
  });
});
