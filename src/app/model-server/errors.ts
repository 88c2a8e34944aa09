// The errors of a model server: it did not become healthy in time, it exited, it answered a passthrough with an error.
import { FlashError } from "../../flash-error.js";
import type { UpstreamAnswer } from "../../job/errors.js";

/** The server exited, or did not answer its health check with 200 within the start timeout. */
export class ServerStartError extends FlashError {
  readonly code = "SERVER_START_FAILED";
  override name = "ServerStartError";
}

/** The server exited while the worker ran: the message names the exit; the server's last lines stay in the log. */
export class ServerExitedError extends FlashError {
  readonly code = "SERVER_EXITED";
  override name = "ServerExitedError";
}

/**
 * The server answered an OpenAI passthrough with a status other than 2xx. The job fails carrying that answer
 * (`upstream`), and the platform's /openai/v1 gives the caller its status, content type and body unchanged.
 */
export class ServerHttpError extends FlashError {
  readonly code = "SERVER_HTTP";
  override name = "ServerHttpError";
  constructor(
    readonly status: number,
    message: string,
    readonly upstream: UpstreamAnswer = { status, contentType: "text/plain", body: message },
  ) {
    super(message);
  }
}
