// Remote-function dispatch: a FunctionRequest (docs/toolkit.md §2.1) → the registered TypeScript function or
// class → a FunctionResponse with every §2.2 field. Pure: no I/O, no globals; the caller owns the registry.
import { FlashError, isFlashError } from "../flash-error.js";
import { stackText } from "../log/stack.js";
import { tracing } from "../trace/index.js";
import { deserializeArg, serializeResult } from "./base64.js";
import type { DecodeOptions } from "./decode.js";
import type { Protocol } from "./encode.js";
import { toJson } from "./json.js";
import { convert, type Declared, declaredTypes, type PyType } from "./pytypes.js";
import { missingArgumentsMessage, parameterNames } from "./signature.js";
import type { FunctionRequest, FunctionResponse, InstanceInfo } from "./types.js";
import { setOwn } from "./values.js";

// In pytypes.ts so that remote() checks declarations without loading the codec (src/index.ts); exported here as before.
export { declaredTypes };

/** Any function; parameters are typed by the user, so the registry accepts every signature. */
export type RemoteFunction = (...args: never[]) => unknown;
/** A class whose methods Python calls in class mode (`execution_type: "class"`). */
export type RemoteClass = abstract new (...args: never[]) => object;

/** A registered target, optionally with its parameter names so Python keyword arguments map to positions. */
export interface RemoteEntry {
  target: RemoteFunction | RemoteClass;
  params?: readonly string[];
  /** Python types of parameters (by name, listed in `params`) and of `return`; see pytypes.ts. */
  types?: Readonly<Record<string, PyType>>;
  /** Arguments exactly as decoded: an integral float stays a PyFloat, so passing it back keeps float. */
  exact?: boolean;
}

/** The outcome of a call and what it wrote to stdout and stderr meanwhile. */
export type Captured<T> =
  | { ok: true; value: T; output: string }
  | { ok: false; error: unknown; output: string };

export type RemoteTarget = RemoteFunction | RemoteClass | RemoteEntry;
export type RemoteRegistry = ReadonlyMap<string, RemoteTarget>;

export interface DispatcherOptions {
  /** Decoder options (timeout, clock, limits) for every argument. */
  decode?: DecodeOptions;
  /** Pickle protocol of `result`; cloudpickle's default is 5. */
  protocol?: Protocol;
  /** Clock for instance_info timestamps. */
  now?: () => Date;
  /** Class instances kept at once; the least recently used is dropped beyond it. */
  maxInstances?: number;
  /** Runs a user call and captures its output for `stdout`; without it, `stdout` is "". */
  capture?: <T>(call: () => Promise<T>) => Promise<Captured<T>>;
}

/** Instances kept in class mode, keyed by instance_id. */
export const MAX_INSTANCES = 1000;

interface Instance {
  object: object;
  info: InstanceInfo;
}

type Call = (...args: unknown[]) => unknown;

/** True when a job input is a remote-function request rather than ordinary handler input. */
export function isFunctionRequest(input: unknown): input is FunctionRequest {
  if (typeof input !== "object" || input === null || Array.isArray(input)) return false;
  const r = input as Record<string, unknown>;
  const named =
    typeof r.function_name === "string" || (r.execution_type === "class" && typeof r.class_name === "string");
  const shaped =
    (r.args === undefined || Array.isArray(r.args)) &&
    (r.kwargs === undefined ||
      (typeof r.kwargs === "object" && r.kwargs !== null && !Array.isArray(r.kwargs))) &&
    (r.execution_type === undefined || r.execution_type === "function" || r.execution_type === "class");
  return named && shaped;
}

/** The response shape with every key present, as `FunctionResponse.model_dump()` sends it. */
export function functionResponse(fields: Partial<FunctionResponse> & { success: boolean }): FunctionResponse {
  return {
    success: fields.success,
    result: fields.result ?? null,
    json_result: fields.json_result ?? null,
    error: fields.error ?? null,
    stdout: fields.stdout ?? null,
    instance_id: fields.instance_id ?? null,
    instance_info: fields.instance_info ?? null,
  };
}

/** Python's error text: "<str(exc)>\n<traceback>"; the JS stack stands in for the traceback. */
function errorText(e: unknown): string {
  if (e instanceof Error) return `${e.message}\n${stackText(e, "")}`;
  return String(e);
}

/** A FunctionRequest that names nothing callable, or a job input that is none: answered with its message alone. */
export class RequestError extends FlashError {
  readonly code = "REMOTE_REQUEST_INVALID";
  override name = "RequestError";
}

function entryOf(t: RemoteTarget): RemoteEntry {
  return typeof t === "function" ? { target: t } : t;
}

/** Dispatches FunctionRequests to a registry; keeps class-mode instances between calls. */
export class RemoteDispatcher {
  readonly instances = new Map<string, Instance>();
  private readonly now: () => Date;
  private readonly declarations = new WeakMap<object, Declared>();
  private readonly signatures = new WeakMap<object, (string | undefined)[] | undefined>();

  constructor(
    private readonly registry: RemoteRegistry,
    private readonly options: DispatcherOptions = {},
  ) {
    this.now = options.now ?? (() => new Date());
  }

  /** Never throws: every failure is a `success: false` response with the reason in `error`. */
  async dispatch(request: FunctionRequest): Promise<FunctionResponse> {
    const output = { text: "" };
    try {
      return request.execution_type === "class"
        ? await this.callMethod(request, output)
        : await this.callFunction(request, output);
    } catch (e) {
      return functionResponse({
        success: false,
        error: isFlashError(e, "REMOTE_REQUEST_INVALID") ? e.message : errorText(e),
        stdout: output.text,
      });
    }
  }

  /** Runs the user's code with its output added to `output.text`; rethrows what it throws. */
  private async run(call: () => unknown, output: { text: string }): Promise<unknown> {
    const capture = this.options.capture;
    if (capture === undefined) return await call();
    const done = await capture(async () => await call());
    output.text += done.output;
    if (!done.ok) throw done.error;
    return done.value;
  }

  private declared(name: string, entry: RemoteEntry): Declared {
    let d = this.declarations.get(entry.target);
    if (d === undefined) {
      d = declaredTypes(name, entry);
      this.declarations.set(entry.target, d);
    }
    return d;
  }

  private json(request: FunctionRequest): boolean {
    return request.serialization_format === "json";
  }

  private decodeArgs(
    request: FunctionRequest,
    args: unknown,
    kwargs: unknown,
    exact = false,
  ): [unknown[], Record<string, unknown>] {
    const list = args ?? [];
    const dict = kwargs ?? {};
    if (!Array.isArray(list)) throw new RequestError("args must be a list");
    if (typeof dict !== "object" || dict === null || Array.isArray(dict))
      throw new RequestError("kwargs must be an object");
    if (this.json(request)) return [list, dict as Record<string, unknown>];
    // Tracing on: the pickle decode is a "decode" span of the handler's.
    if (!tracing) return this.unpickle(list, dict, exact);
    return tracing.span("decode", { "flash.payload.args": list.length }, () =>
      this.unpickle(list, dict, exact),
    );
  }

  private unpickle(list: unknown[], dict: object, exact: boolean): [unknown[], Record<string, unknown>] {
    // the limits and messages of docs/toolkit.md §3 apply to each argument on its own
    const options: DecodeOptions = { ...this.options.decode, floats: exact ? "PyFloat" : "number" };
    const decoded = list.map((a) => deserializeArg(a, options));
    const named: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(dict)) {
      setOwn(named, k, deserializeArg(v, options));
    }
    return [decoded, named];
  }

  /**
   * Positional args, then kwargs: by parameter name when the entry lists them, else as one trailing object.
   * Required parameters (those before the first default) left out are Python's TypeError.
   */
  private callArgs(
    callee: string,
    target: RemoteFunction | RemoteClass | Call,
    params: readonly string[] | undefined,
    args: unknown[],
    kwargs: Record<string, unknown>,
  ): unknown[] {
    const keys = Object.keys(kwargs);
    const out = [...args];
    const given = new Set<number>(args.keys());
    if (keys.length > 0 && params === undefined) {
      out.push(kwargs);
      return out;
    }
    for (const k of keys) {
      const at = params!.indexOf(k);
      if (at < 0) throw new RequestError(`${callee}() got an unexpected keyword argument '${k}'`);
      if (at < args.length) throw new RequestError(`${callee}() got multiple values for argument '${k}'`);
      while (out.length < at) out.push(undefined);
      out[at] = kwargs[k];
      given.add(at);
    }
    const missing: string[] = [];
    for (let i = 0; i < target.length; i++) {
      if (given.has(i)) continue;
      missing.push(params?.[i] ?? this.parameterNames(target)?.[i] ?? `#${i + 1}`);
    }
    if (missing.length > 0) throw new RequestError(missingArgumentsMessage(callee, missing));
    return out;
  }

  private parameterNames(target: RemoteFunction | RemoteClass | Call): (string | undefined)[] | undefined {
    if (!this.signatures.has(target)) this.signatures.set(target, parameterNames(target));
    return this.signatures.get(target);
  }

  /** Arguments converted to their declared types; a mismatch is a TypeError-shaped request error. */
  private typedArgs(
    callee: string,
    declared: Declared,
    params: readonly string[] | undefined,
    args: unknown[],
  ): unknown[] {
    if (declared.args.length === 0) return args;
    return args.map((v, i) => {
      const node = declared.args[i];
      if (node === undefined || v === undefined) return v;
      try {
        return convert(v, node, "in", `argument '${params?.[i] ?? i}'`);
      } catch (e) {
        if (isFlashError(e, "TYPE_MISMATCH")) throw new RequestError(`${callee}() ${e.message}`);
        throw e;
      }
    });
  }

  private answer(
    request: FunctionRequest,
    value: unknown,
    extra: Partial<FunctionResponse> & { stdout: string },
  ): FunctionResponse {
    if (this.json(request)) return functionResponse({ success: true, json_result: toJson(value), ...extra });
    const options = this.options.protocol === undefined ? undefined : { protocol: this.options.protocol };
    // Tracing on: the pickle encode is an "encode" span of the handler's.
    const result = tracing
      ? tracing.span("encode", {}, () => serializeResult(value, options))
      : serializeResult(value, options);
    return functionResponse({ success: true, result, ...extra });
  }

  /** The return value converted to its declared type (declared floats go back as float). */
  private typedResult(callee: string, declared: Declared, value: unknown): unknown {
    if (declared.result === undefined) return value;
    try {
      return convert(value, declared.result, "out", "return value");
    } catch (e) {
      if (isFlashError(e, "TYPE_MISMATCH")) throw new RequestError(`${callee}() ${e.message}`);
      throw e;
    }
  }

  private lookup(name: string, request: FunctionRequest, code: string | null | undefined): RemoteEntry {
    const target = this.registry.get(name);
    if (target !== undefined) return entryOf(target);
    const what = request.execution_type === "class" ? "Class" : "Function";
    const why =
      typeof code === "string" && code.length > 0
        ? `this worker runs registered TypeScript functions and cannot execute the Python source sent in ${what === "Class" ? "class_code" : "function_code"}`
        : "this worker runs registered TypeScript functions only";
    throw new RequestError(
      `${what} '${name}' is not registered: ${why}. Register it in the worker, e.g. remote("${name}", fn).`,
    );
  }

  private async callFunction(request: FunctionRequest, output: { text: string }): Promise<FunctionResponse> {
    const name = request.function_name;
    if (typeof name !== "string" || name.length === 0) {
      throw new RequestError('function_name is required when execution_type is "function"');
    }
    const entry = this.lookup(name, request, request.function_code);
    const declared = this.declared(name, entry);
    const [args, kwargs] = this.decodeArgs(request, request.args, request.kwargs, entry.exact);
    const call = this.typedArgs(
      name,
      declared,
      entry.params,
      this.callArgs(name, entry.target, entry.params, args, kwargs),
    );
    const value = await this.run(() => (entry.target as unknown as Call)(...call), output);
    return this.answer(request, this.typedResult(name, declared, value), { stdout: output.text });
  }

  private async callMethod(request: FunctionRequest, output: { text: string }): Promise<FunctionResponse> {
    const className = request.class_name;
    if (typeof className !== "string" || className.length === 0) {
      throw new RequestError('class_name is required when execution_type is "class"');
    }
    const entry = this.lookup(className, request, request.class_code);
    let id = request.instance_id ?? null;
    let inst = id !== null && request.create_new_instance === false ? this.instances.get(id) : undefined;
    const methodName = request.method_name ?? "__call__";
    const [args, kwargs] = this.decodeArgs(request, request.args, request.kwargs, entry.exact);
    if (inst === undefined) {
      const [cargs, ckwargs] = this.decodeArgs(
        request,
        request.constructor_args,
        request.constructor_kwargs,
        entry.exact,
      );
      const Ctor = entry.target as unknown as new (...a: unknown[]) => object;
      const ctorArgs = this.callArgs(`${className}.__init__`, Ctor, undefined, cargs, ckwargs);
      const object = (await this.run(() => new Ctor(...ctorArgs), output)) as object;
      const at = this.now().toISOString();
      inst = { object, info: { class_name: className, created_at: at, method_calls: 0, last_used: at } };
      id ??= `${className}_${Math.random().toString(16).slice(2, 10).padEnd(8, "0")}`;
      this.keep(id, inst);
    } else {
      this.keep(id!, inst);
    }
    const method = findMethod(inst.object, methodName);
    if (method === undefined) throw new RequestError(`'${className}' object has no method '${methodName}'`);
    const callee = `${className}.${methodName}`;
    const object = inst.object;
    const methodArgs = this.callArgs(callee, method, undefined, args, kwargs);
    const value = await this.run(() => method.apply(object, methodArgs), output);
    inst.info.method_calls++;
    inst.info.last_used = this.now().toISOString();
    return this.answer(request, value, {
      instance_id: id,
      instance_info: { ...inst.info },
      stdout: output.text,
    });
  }

  /** Stores (or refreshes) an instance as most recently used, dropping the oldest beyond the cap. */
  private keep(id: string, inst: Instance): void {
    this.instances.delete(id);
    this.instances.set(id, inst);
    const cap = this.options.maxInstances ?? MAX_INSTANCES;
    while (this.instances.size > cap) {
      const oldest = this.instances.keys().next().value;
      if (oldest === undefined) break;
      this.instances.delete(oldest);
    }
  }
}

/** A method of the instance's own class chain; Object.prototype members and "constructor" are never callable. */
function findMethod(object: object, name: string): Call | undefined {
  if (name === "constructor") return undefined;
  const names = name === "__call__" ? ["__call__", "call"] : [name];
  for (const n of names) {
    let proto: object | null = object;
    while (proto !== null && proto !== Object.prototype) {
      const d = Object.getOwnPropertyDescriptor(proto, n);
      if (d !== undefined) return typeof d.value === "function" ? (d.value as Call) : undefined;
      proto = Object.getPrototypeOf(proto) as object | null;
    }
  }
  return undefined;
}

/** Convenience: a dispatch function over a registry. */
export function createRemoteDispatcher(
  registry: RemoteRegistry,
  options?: DispatcherOptions,
): (request: FunctionRequest) => Promise<FunctionResponse> {
  const d = new RemoteDispatcher(registry, options);
  return (request) => d.dispatch(request);
}
