// Reads an openai chat-completion stream as the tests check it: every item a chunk, its text deltas, its finish.
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { expect } from "vitest";

export async function readDeltas(
  stream: AsyncIterable<ChatCompletionChunk>,
): Promise<{ deltas: string[]; finish: string | null | undefined }> {
  const deltas: string[] = [];
  let finish: string | null | undefined;
  for await (const chunk of stream) {
    expect(chunk.object).toBe("chat.completion.chunk");
    const choice = chunk.choices[0];
    if (choice?.delta.content) deltas.push(choice.delta.content);
    if (choice?.finish_reason) finish = choice.finish_reason;
  }
  return { deltas, finish };
}
