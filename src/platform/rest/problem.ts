// REST v2 errors as the document gives them: application/problem+json `{title, status, detail, errors?}`.

import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { isFlashError } from "../../flash-error.js";
import type { Logger } from "../../log/index.js";
import type { Problem } from "../state/problem.js";

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  415: "Unsupported Media Type",
  422: "Unprocessable Entity",
  500: "Internal Server Error",
};

export function sendProblem(reply: FastifyReply, status: number, detail: string, errors?: string[]) {
  return (
    reply
      .code(status)
      .type("application/problem+json")
      // RFC 9457: `errors` appears only when there are some.
      .send({ title: TITLES[status] ?? "Error", status, detail, ...(errors?.length ? { errors } : {}) })
  );
}

/** The REST routes' error handler: Problems as they are, anything else as a problem body too. */
export function problemHandler(log: Logger) {
  return (err: FastifyError & { statusCode?: number }, request: FastifyRequest, reply: FastifyReply) => {
    if (isFlashError(err, "HTTP_PROBLEM")) {
      const problem = err as unknown as Problem;
      return sendProblem(reply, problem.status, problem.detail, problem.errors);
    }
    // Our own HttpError names it `status`; fastify's errors `statusCode`.
    const given = isFlashError(err, "HTTP_STATUS")
      ? (err as unknown as { status: number }).status
      : err.statusCode;
    const status = given && given >= 400 ? given : 500;
    if (status >= 500) log.error(`${request.method} ${request.url} failed: ${err.message}`);
    return sendProblem(reply, status, err.message);
  };
}
