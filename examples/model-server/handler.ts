// A queue endpoint in front of an OpenAI-compatible model server (vLLM by default). The runtime starts the server
// with the worker, takes no job until its /health answers 200, and sends {openai_route, openai_input} jobs (what
// the endpoint's /openai/v1 base URL makes) straight to it, streaming included. Other jobs, RunPod's native
// {"messages": [...]} or {"prompt": "..."}, are answered by the handler below through the server's client.
import { handler, server } from "flash-worker";

// 0: a free port for each worker's server (`flash dev` runs several), put where the command says {port}.
const port = Number(process.env.MODEL_SERVER_PORT ?? 0);
const model = server({
  // A shell command line, e.g. "llama-server -m /models/qwen.gguf --port {port}".
  command:
    process.env.MODEL_SERVER_COMMAND ??
    `vllm serve ${process.env.MODEL_NAME ?? "Qwen/Qwen3-0.6B"} --port {port}`,
  port,
  name: "vllm",
});

interface NativeInput {
  messages?: unknown[];
  prompt?: string;
  sampling_params?: Record<string, unknown>;
}

export default handler<NativeInput>(
  async (job) => {
    const { messages, prompt, sampling_params: params = {} } = job.input;
    const route = messages ? "/v1/chat/completions" : "/v1/completions";
    const models = (await (await model.fetch("/v1/models")).json()) as { data: { id: string }[] };
    const answer = await model.fetch(route, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: models.data[0]?.id,
        ...(messages ? { messages } : { prompt }),
        ...params,
      }),
    });
    if (!answer.ok) throw new Error(`${route} answered ${answer.status}: ${await answer.text()}`);
    return answer.json();
  },
  { server: model },
);
