// Remote functions: Python's remote-function toolkit calls these by name with cloudpickle arguments,
// and gets the return values back as cloudpickle, with the same values and types.
import { remote } from "flash-worker";

/** Returns its argument unchanged: exact keeps every Python type (1.0 stays a float) on the round trip. */
remote("echo", (value: unknown) => value, { exact: true });

remote(
  "add",
  (a: number | bigint, b: number | bigint) =>
    typeof a === "bigint" || typeof b === "bigint" ? BigInt(a) + BigInt(b) : a + b,
  {
    params: ["a", "b"],
  },
);

/** Declared types: Python gets floats back, [0.5, 1.0] for scale([1, 2], 0.5), and a str for k is refused. */
remote("scale", (xs: number[], k: number) => xs.map((x) => x * k), {
  params: ["xs", "k"],
  types: { xs: "list[float]", k: "float", return: "list[float]" },
});

remote(
  "describe",
  async (values: number[]) => {
    const sum = values.reduce((s, v) => s + v, 0);
    return { count: values.length, sum, mean: values.length ? sum / values.length : null };
  },
  { params: ["values"], types: { values: "list[float]", return: { sum: "float", mean: "float | None" } } },
);

/** Class mode: Python keeps an instance by instance_id and calls its methods. */
class Counter {
  private count: number;
  constructor(start = 0) {
    this.count = start;
  }
  increment(by = 1): number {
    console.log(`increment by ${by}`);
    this.count += by;
    return this.count;
  }
}
remote("Counter", Counter);
