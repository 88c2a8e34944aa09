// What `flash deploy` prints for each endpoint it created or updated: where it is, a queue endpoint's OpenAI base
// URL when it serves OpenAI clients (as `flash dev` prints it), and a curl to try it with.
import type { DeployedEntry } from "./deploy.js";
import { openaiBaseUrl } from "./mapping.js";
import { readTestInput } from "./wait.js";

/** A JSON body inside the single quotes of a shell command. */
const shellQuoted = (body: unknown) => `'${JSON.stringify(body).replaceAll("'", "'\\''")}'`;

/** The curl the user can try an endpoint with: its test_input.json when it has one. */
function curlLine(root: string, entry: DeployedEntry): string {
  const auth = '-H "Authorization: Bearer $RUNPOD_API_KEY"';
  const json = "-H 'Content-Type: application/json'";
  const sample = readTestInput(root, entry.endpoint.file);
  if (entry.endpoint.kind === "load-balanced") {
    const route = entry.endpoint.routes[0];
    const request =
      sample?.kind === "request"
        ? sample
        : {
            method: route?.method ?? "GET",
            path: route?.path ?? "/",
            body: route && route.method !== "GET" ? {} : undefined,
          };
    const body = request.body === undefined ? "" : ` ${json} -d ${shellQuoted(request.body)}`;
    return `curl -X ${request.method} '${entry.url}${request.path}' ${auth}${body}`;
  }
  const body = sample?.kind === "job" ? sample.body : { input: {} };
  return `curl -X POST ${entry.url}/runsync ${auth} ${json} -d ${shellQuoted(body)}`;
}

/** The summary's lines for one endpoint. */
export function endpointSummary(root: string, entry: DeployedEntry): string[] {
  const { endpoint, id, url, action } = entry;
  const lines: string[] = [];
  if (endpoint.kind === "load-balanced") {
    lines.push(
      `  ${endpoint.name}  ${id} (${action})  ${url}/<path>  (routes: ${endpoint.routes.map((r) => `${r.method} ${r.path}`).join(", ")})`,
    );
  } else {
    lines.push(`  ${endpoint.name}  ${id} (${action})  ${url}/runsync`);
    if (endpoint.openai) lines.push(`    OpenAI base URL: ${openaiBaseUrl(url)}`);
  }
  lines.push(`    ${curlLine(root, entry)}`);
  return lines;
}
