// Device check, part 1: a real queue worker (`flash start`) against a stand-in platform on 127.0.0.1, three
// ways: checks on (they pass, then the job runs), checks off (the cold-start baseline), and a GPU check made
// to fail (the unhealthy report, exit 1, no job taken). Prints one JSON object.
// usage: node device-worker.mjs <flash main.js> <handler file> [scenario...]
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { dirname } from "node:path";

const [flash, handlerFile, ...only] = process.argv.slice(2);
const JOB = { id: "gpu-job-1", input: { n: 4194304, a: 2.5, runs: 2 } };

function platform() {
  const seen = { takes: [], done: [], pings: [], unhealthy: [] };
  let handed = false;
  const server = createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    let body = "";
    req.on("data", (c) => {
      body += c;
    });
    req.on("end", () => {
      const at = performance.now();
      if (url.pathname.includes("/job-take/")) {
        seen.takes.push(at);
        if (!handed) {
          handed = true;
          res.writeHead(200, { "content-type": "application/json" });
          return res.end(JSON.stringify(JOB));
        }
        return setTimeout(() => res.writeHead(204).end(), 200);
      }
      if (url.pathname.includes("/job-done/")) {
        seen.done.push({ at, body: body.slice(0, 4000) });
        return res.writeHead(200).end("{}");
      }
      if (url.pathname.includes("/ping/")) {
        const q = Object.fromEntries(url.searchParams);
        (q.status === "unhealthy" ? seen.unhealthy : seen.pings).push({ q, auth: req.headers.authorization });
        return res.writeHead(200).end("{}");
      }
      res.writeHead(404).end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ server, seen, port: server.address().port })),
  );
}

async function scenario(name, extraEnv) {
  const { server, seen, port } = await platform();
  const base = `http://127.0.0.1:${port}/v2/EP`;
  const env = {
    ...process.env,
    RUNPOD_WEBHOOK_GET_JOB: `${base}/job-take/$ID?gpu=H200`,
    RUNPOD_WEBHOOK_POST_OUTPUT: `${base}/job-done/$RUNPOD_POD_ID/$ID?gpu=H200`,
    RUNPOD_WEBHOOK_PING: `${base}/ping/$RUNPOD_POD_ID?gpu=H200`,
    RUNPOD_POD_ID: "device-worker",
    RUNPOD_AI_API_KEY: "device-key",
    RUNPOD_NETWORK_CHECK_HOST: "127.0.0.1",
    RUNPOD_NETWORK_CHECK_PORT: String(port),
    ...extraEnv,
  };
  const started = performance.now();
  const child = spawn(process.execPath, [flash, "start", handlerFile], {
    cwd: dirname(handlerFile),
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (c) => {
    output += c;
  });
  child.stderr.on("data", (c) => {
    output += c;
  });
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  const deadline = Date.now() + 35_000;
  let code;
  for (;;) {
    code = await Promise.race([exited, new Promise((r) => setTimeout(() => r(undefined), 100))]);
    if (code !== undefined) break;
    const doneNeeded = !extraEnv.RUNPOD_GPU_BENCHMARK_TIMEOUT;
    if (doneNeeded && seen.done.length > 0) {
      child.kill("SIGTERM");
      code = await exited;
      break;
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      code = `timeout (${await exited})`;
      break;
    }
  }
  server.close();
  const lines = output.split("\n").filter(Boolean);
  return {
    scenario: name,
    env: extraEnv,
    exitCode: code,
    msSpawnToFirstTake: seen.takes.length ? Math.round(seen.takes[0] - started) : null,
    takes: seen.takes.length,
    unhealthy: seen.unhealthy,
    result: seen.done[0] ? JSON.parse(seen.done[0].body) : null,
    fitnessLines: lines.filter((l) => /fitness|GPU|unhealthy|Worker is/i.test(l)).slice(0, 40),
    tail: lines.slice(-8),
  };
}

const all = {
  checks: () => scenario("checks", {}),
  "no-checks": () => scenario("no-checks", { RUNPOD_SKIP_FITNESS_CHECKS: "true" }),
  "gpu-fails": () => scenario("gpu-fails", { RUNPOD_GPU_BENCHMARK_TIMEOUT: "0.00001" }),
};
const report = [];
for (const [name, run] of Object.entries(all)) {
  if (only.length === 0 || only.includes(name)) report.push(await run());
}
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
