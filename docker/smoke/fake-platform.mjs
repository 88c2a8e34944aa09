// A minimal job queue for the image smoke test (docker/build.sh, run inside the image by its node):
// serves one job from job-take, then "no job" (204), and prints every result and stream post, so a queue
// worker in the image runs end to end without the platform. Usage: fake-platform.mjs <port> '<job JSON>'
import { createServer } from "node:http";

const port = Number(process.argv[2]);
let job = process.argv[3];

createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    const path = request.url ?? "";
    if (request.method === "GET" && path.startsWith("/take")) {
      if (job === undefined) {
        response.writeHead(204).end();
        return;
      }
      response.writeHead(200, { "content-type": "application/json" }).end(job);
      job = undefined;
      return;
    }
    console.log(`fake-platform: ${request.method} ${path} ${Buffer.concat(chunks).toString("utf8")}`);
    response.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
}).listen(port, "127.0.0.1", () => console.log(`fake-platform: listening on ${port}`));
