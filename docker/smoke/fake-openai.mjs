// A stand-in for vLLM's OpenAI server in the model-server smoke test: /health, /v1/models and a plain
// /v1/chat/completions that echoes the last message. argv[2]: the port.
import { createServer } from "node:http";

const port = Number(process.argv[2] ?? 8000);
const json = (res, body) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
createServer((req, res) => {
  if (req.url === "/health") return res.writeHead(200).end();
  if (req.url === "/v1/models") return json(res, { object: "list", data: [{ id: "stand-in", object: "model" }] });
  if (req.url === "/v1/chat/completions" && req.method === "POST") {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      const { messages = [] } = JSON.parse(body || "{}");
      const content = `echo: ${messages.at(-1)?.content ?? ""}`;
      json(res, { object: "chat.completion", model: "stand-in", choices: [{ index: 0, message: { role: "assistant", content } }] });
    });
    return;
  }
  res.writeHead(404).end();
}).listen(port, "127.0.0.1", () => console.log(`stand-in OpenAI server on ${port}`));
