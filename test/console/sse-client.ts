// Reads a Server-Sent Events response with fetch, the way a test can wait for "the next jobs event where …".
export interface SseEvent {
  event: string;
  data: unknown;
}

export class SseClient {
  readonly events: SseEvent[] = [];
  comments = 0;
  ended = false;
  private cursor = 0;
  private readonly waiters = new Set<() => void>();
  private readonly abort = new AbortController();

  private constructor(readonly response: Response) {}

  /** Opens the stream; resolves once the response headers are in. */
  static async open(url: string): Promise<SseClient> {
    const controller = new AbortController();
    const response = await fetch(url, {
      headers: { accept: "text/event-stream" },
      signal: controller.signal,
    });
    const client = new SseClient(response);
    client.abort.signal.addEventListener("abort", () => controller.abort());
    if (response.ok && response.body) void client.read(response.body);
    return client;
  }

  /** The next event (after those already returned) with this name that passes the check. */
  next<T>(event: string, check: (data: T) => boolean = () => true, timeoutMs = 10_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const look = (): boolean => {
        for (let i = this.cursor; i < this.events.length; i++) {
          const found = this.events[i];
          if (found?.event === event && check(found.data as T)) {
            this.cursor = i + 1;
            resolve(found.data as T);
            return true;
          }
        }
        if (this.ended) {
          reject(new Error(`The stream ended before a matching "${event}" event`));
          return true;
        }
        return false;
      };
      if (look()) return;
      const timer = setTimeout(() => {
        this.waiters.delete(wake);
        reject(new Error(`No matching "${event}" event within ${timeoutMs} ms; got ${this.names()}`));
      }, timeoutMs);
      const wake = () => {
        if (look()) {
          clearTimeout(timer);
          this.waiters.delete(wake);
        }
      };
      this.waiters.add(wake);
    });
  }

  /** Resolves when the server ends the stream. */
  async closedByServer(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.ended) {
      if (Date.now() > deadline) throw new Error("The stream is still open");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  names(): string {
    return this.events.map((e) => e.event).join(",") || "nothing";
  }

  close(): void {
    this.abort.abort();
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    let buffered = "";
    try {
      for await (const chunk of body.pipeThrough(new TextDecoderStream())) {
        buffered += chunk;
        let end = buffered.indexOf("\n\n");
        while (end !== -1) {
          this.parse(buffered.slice(0, end));
          buffered = buffered.slice(end + 2);
          end = buffered.indexOf("\n\n");
        }
        for (const wake of [...this.waiters]) wake();
      }
    } catch {
      // Aborted by close(), or the server went away: both end the stream.
    }
    this.ended = true;
    for (const wake of [...this.waiters]) wake();
  }

  private parse(block: string): void {
    let event = "message";
    const data: string[] = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) this.comments++;
      else if (line.startsWith("event: ")) event = line.slice(7);
      else if (line.startsWith("data: ")) data.push(line.slice(6));
    }
    if (data.length > 0) this.events.push({ event, data: JSON.parse(data.join("\n")) });
  }
}
