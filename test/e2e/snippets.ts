// The fenced blocks of a Markdown file, each with the `## ` section it is in: the README tests run them as written.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../process.js";

export interface Snippet {
  file: string;
  /** The `## ` section it is in. */
  section: string;
  lang: string;
  text: string;
}

/** Every fenced block of a Markdown file, with its section and info string. */
export function snippets(file: string): Snippet[] {
  const out: Snippet[] = [];
  let section = "";
  let open: Snippet | undefined;
  for (const line of readFileSync(join(ROOT, file), "utf8").split("\n")) {
    if (open) {
      if (line.startsWith("```")) {
        out.push(open);
        open = undefined;
      } else open.text += `${line}\n`;
    } else if (line.startsWith("## ")) section = line.slice(3).trim();
    else if (line.startsWith("```")) open = { file, section, lang: line.slice(3).trim(), text: "" };
  }
  return out;
}
