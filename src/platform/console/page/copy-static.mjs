// `npm run build` step: tsc compiles the page's TypeScript; this copies its markup and stylesheet beside it.
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "../../../../dist/platform/console/page");
mkdirSync(out, { recursive: true });
for (const name of ["index.html", "console.css"]) copyFileSync(join(here, name), join(out, name));
