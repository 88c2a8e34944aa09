// A broken rule of the REST v2 state, with the status it is answered with (rest/problem.ts writes the body).
import { FlashError } from "../../flash-error.js";

/** An error answer; `errors` lists field-level failures. */
export class Problem extends FlashError {
  readonly code = "HTTP_PROBLEM";
  override name = "Problem";
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly errors?: string[],
  ) {
    super(detail);
  }
}

/** The 422 of a body that breaks the document's schema, each violation named. */
export function invalidBody(errors: string[]): Problem {
  return new Problem(422, "Request validation failed.", errors);
}
