import { readFileSync } from "node:fs";
import { decode } from "../../src/payload/index.js";

const b = new Uint8Array(readFileSync("/tmp/prof/records.pkl"));
for (let i = 0; i < 20; i++) decode(b);
