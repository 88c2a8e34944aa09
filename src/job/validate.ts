// Input validation with any Standard Schema validator (zod, valibot, arktype: the `~standard` interface).

import type { StandardSchemaV1 } from "@standard-schema/spec";
import { FlashError } from "../flash-error.js";
import type { HandlerFn, Job } from "./types.js";

export type { StandardSchemaV1 };

/** One problem found in a value: where (`input.steps`, `body.items[2]`) and what. */
export interface ValidationIssue {
  path: string;
  message: string;
}

/** A value refused by its schema; the message lists every issue, one per line after the first. */
export class ValidationError extends FlashError {
  readonly code = "VALIDATION_FAILED";
  override name = "ValidationError";
  readonly issues: readonly ValidationIssue[];

  constructor(subject: string, issues: readonly ValidationIssue[]) {
    const count = issues.length === 1 ? "1 issue" : `${issues.length} issues`;
    super(`Invalid ${subject} (${count}):\n${issues.map((i) => `${i.path}: ${i.message}`).join("\n")}`);
    this.issues = issues;
  }
}

export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  const props = (value as { "~standard"?: { version?: unknown; validate?: unknown } } | null)?.["~standard"];
  return (
    (typeof value === "object" || typeof value === "function") &&
    props?.version === 1 &&
    typeof props.validate === "function"
  );
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** `root.a[0]["odd key"]`: the path as a JavaScript reader would write it. */
export function formatPath(root: string, path: StandardSchemaV1.Issue["path"]): string {
  let text = root;
  for (const segment of path ?? []) {
    const key = typeof segment === "object" && segment !== null ? segment.key : segment;
    if (typeof key === "number") text += `[${key}]`;
    else if (typeof key === "symbol") text += `[${key.toString()}]`;
    else if (/^\d+$/.test(key)) text += `[${key}]`;
    else if (IDENTIFIER.test(key)) text += `.${key}`;
    else text += `[${JSON.stringify(key)}]`;
  }
  return text;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; issues: ValidationIssue[] };

function toChecked<T>(result: StandardSchemaV1.Result<T>, root: string): Checked<T> {
  if (!result.issues) return { ok: true, value: result.value };
  const issues = result.issues.map((issue) => ({
    path: formatPath(root, issue.path),
    message: issue.message,
  }));
  // A schema that fails without saying why still gets a line.
  if (issues.length === 0) issues.push({ path: root, message: "Invalid value" });
  return { ok: false, issues };
}

/** Validates `value`; synchronous when the schema is, so plain routes keep their fast path. */
export function check<T>(
  schema: StandardSchemaV1<unknown, T>,
  value: unknown,
  root: string,
): Checked<T> | Promise<Checked<T>> {
  const result = schema["~standard"].validate(value);
  if (result instanceof Promise) return result.then((settled) => toChecked(settled, root));
  return toChecked(result, root);
}

/**
 * The handler behind `handler(fn, { input: schema })`: the job's input is validated first and the
 * handler sees the schema's output (defaults and transforms applied); bad input fails the job before
 * `fn` runs, with every issue listed.
 */
export function withInputSchema(fn: HandlerFn, schema: StandardSchemaV1, atSubmit = false): HandlerFn {
  const call = (job: Job, checked: Checked<unknown>) => {
    if (!checked.ok) throw new ValidationError("input", checked.issues);
    return fn({ ...job, input: checked.value });
  };
  const validated: HandlerFn = (job) => {
    const checked = check(schema, job.input, "input");
    return checked instanceof Promise ? checked.then((c) => call(job, c)) : call(job, checked);
  };
  withSchema(validated, schema);
  return atSubmit ? Object.defineProperty(validated, AT_SUBMIT, { value: true }) : validated;
}

// Symbol.for: the runtime or toolkit reading the schema may be another copy of the package than the app's.
const SCHEMA = Symbol.for("flash-worker.schema");

/** Records on a validating function the schema it checks, for the endpoint's OpenAPI document. */
export function withSchema<F extends object>(fn: F, schema: StandardSchemaV1): F {
  return Object.defineProperty(fn, SCHEMA, { value: schema });
}

const AT_SUBMIT = Symbol.for("flash-worker.validate-at-submit");

/**
 * The check the local platform runs at submit for a handler declared with `validateAtSubmit`: the message of
 * the ValidationError the worker would fail the job with, or undefined when the input passes.
 */
export function submitCheckOf(fn: unknown): ((input: unknown) => Promise<string | undefined>) | undefined {
  const schema = schemaOf(fn);
  if (schema === undefined || (fn as { [AT_SUBMIT]?: unknown })[AT_SUBMIT] !== true) return undefined;
  return async (input) => {
    const checked = await check(schema, input, "input");
    return checked.ok ? undefined : new ValidationError("input", checked.issues).message;
  };
}

/** The schema a handler or route function validates its input with, if it was declared with one. */
export function schemaOf(fn: unknown): StandardSchemaV1 | undefined {
  if (typeof fn !== "function") return undefined;
  const schema = (fn as { [SCHEMA]?: unknown })[SCHEMA];
  return isStandardSchema(schema) ? schema : undefined;
}
