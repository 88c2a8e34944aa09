// Remote functions: Python's remote-function toolkit calls these by name with cloudpickle arguments,
// and gets the return values back as cloudpickle, with the same values and types.
import { remote } from "flash-worker";

/** Returns its argument unchanged: any value makes the round trip Python → TypeScript → Python. */
remote("echo", (value: unknown) => value);

remote(
  "add",
  (a: number | bigint, b: number | bigint) =>
    typeof a === "bigint" || typeof b === "bigint" ? BigInt(a) + BigInt(b) : a + b,
  {
    params: ["a", "b"],
  },
);

remote("describe", async (values: number[]) => {
  const sum = values.reduce((s, v) => s + Number(v), 0);
  return { count: values.length, sum, mean: values.length ? sum / values.length : null };
});

/** Class mode: Python keeps an instance by instance_id and calls its methods. */
class Counter {
  private count: number;
  constructor(start = 0) {
    this.count = start;
  }
  increment(by = 1): number {
    this.count += by;
    return this.count;
  }
}
remote("Counter", Counter);
