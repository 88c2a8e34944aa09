// Remote-function dispatch: a FunctionRequest (flash-toolkit.md §2.1) → the registered TypeScript function or
// class → a FunctionResponse with every §2.2 field. Pure: no I/O, no globals; the caller owns the registry.
import { stackText } from "../log/stack.js";
import { deserializeArg, serializeArg } from "./base64.js";
import type { DecodeOptions } from "./decode.js";
import type { Protocol } from "./encode.js";
import { toJson } from "./json.js";
import type { FunctionRequest, FunctionResponse, InstanceInfo } from "./types.js";

/** Any function; parameters are typed by the user, so the registry accepts every signature. */
export type RemoteFunction = (...args: never[]) => unknown;
/** A class whose methods Python calls in class mode (`execution_type: "class"`). */
export type RemoteClass = abstract new (...args: never[]) => object;

/** A registered target, optionally with its parameter names so Python keyword arguments map to positions. */
export interface RemoteEntry {
  target: RemoteFunction | RemoteClass;
  params?: readonly string[];
}

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

class RequestError extends Error {}

function entryOf(t: RemoteTarget): RemoteEntry {
  return typeof t === "function" ? { target: t } : t;
}

/** Dispatches FunctionRequests to a registry; keeps class-mode instances between calls. */
export class RemoteDispatcher {
  readonly instances = new Map<string, Instance>();
  private readonly now: () => Date;

  constructor(
    private readonly registry: RemoteRegistry,
    private readonly options: DispatcherOptions = {},
  ) {
    this.now = options.now ?? (() => new Date());
  }

  /** Never throws: every failure is a `success: false` response with the reason in `error`. */
  async dispatch(request: FunctionRequest): Promise<FunctionResponse> {
    try {
      return request.execution_type === "class"
        ? await this.callMethod(request)
        : await this.callFunction(request);
    } catch (e) {
      return functionResponse({
        success: false,
        error: e instanceof RequestError ? e.message : errorText(e),
        stdout: "",
      });
    }
  }

  private json(request: FunctionRequest): boolean {
    return request.serialization_format === "json";
  }

  private decodeArgs(
    request: FunctionRequest,
    args: unknown,
    kwargs: unknown,
  ): [unknown[], Record<string, unknown>] {
    const list = args ?? [];
    const dict = kwargs ?? {};
    if (!Array.isArray(list)) throw new RequestError("args must be a list");
    if (typeof dict !== "object" || dict === null || Array.isArray(dict))
      throw new RequestError("kwargs must be an object");
    if (this.json(request)) return [list, dict as Record<string, unknown>];
    // the limits and messages of flash-toolkit.md §3 apply to each argument on its own
    const decoded = list.map((a) => deserializeArg(a, this.options.decode));
    const named: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(dict)) {
      Object.defineProperty(named, k, {
        value: deserializeArg(v, this.options.decode),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return [decoded, named];
  }

  /** Positional args, then kwargs: by parameter name when the entry lists them, else as one trailing object. */
  private callArgs(
    name: string,
    entry: RemoteEntry,
    args: unknown[],
    kwargs: Record<string, unknown>,
  ): unknown[] {
    const keys = Object.keys(kwargs);
    if (keys.length === 0) return args;
    if (entry.params === undefined) return [...args, kwargs];
    const out = [...args];
    for (const k of keys) {
      const at = entry.params.indexOf(k);
      if (at < 0) throw new RequestError(`${name}() got an unexpected keyword argument '${k}'`);
      if (at < args.length) throw new RequestError(`${name}() got multiple values for argument '${k}'`);
      while (out.length < at) out.push(undefined);
      out[at] = kwargs[k];
    }
    return out;
  }

  private answer(
    request: FunctionRequest,
    value: unknown,
    extra: Partial<FunctionResponse> = {},
  ): FunctionResponse {
    if (this.json(request))
      return functionResponse({ success: true, json_result: toJson(value), stdout: "", ...extra });
    return functionResponse({
      success: true,
      result: serializeArg(
        value,
        this.options.protocol === undefined ? undefined : { protocol: this.options.protocol },
      ),
      stdout: "",
      ...extra,
    });
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

  private async callFunction(request: FunctionRequest): Promise<FunctionResponse> {
    const name = request.function_name;
    if (typeof name !== "string" || name.length === 0) {
      throw new RequestError('function_name is required when execution_type is "function"');
    }
    const entry = this.lookup(name, request, request.function_code);
    const [args, kwargs] = this.decodeArgs(request, request.args, request.kwargs);
    const value = await (entry.target as unknown as Call)(...this.callArgs(name, entry, args, kwargs));
    return this.answer(request, value);
  }

  private async callMethod(request: FunctionRequest): Promise<FunctionResponse> {
    const className = request.class_name;
    if (typeof className !== "string" || className.length === 0) {
      throw new RequestError('class_name is required when execution_type is "class"');
    }
    const entry = this.lookup(className, request, request.class_code);
    let id = request.instance_id ?? null;
    let inst = id !== null && request.create_new_instance === false ? this.instances.get(id) : undefined;
    if (inst === undefined) {
      const [cargs, ckwargs] = this.decodeArgs(request, request.constructor_args, request.constructor_kwargs);
      const Ctor = entry.target as unknown as new (...a: unknown[]) => object;
      const object = new Ctor(...this.callArgs(className, { target: entry.target }, cargs, ckwargs));
      const at = this.now().toISOString();
      inst = { object, info: { class_name: className, created_at: at, method_calls: 0, last_used: at } };
      id ??= `${className}_${Math.random().toString(16).slice(2, 10).padEnd(8, "0")}`;
      this.keep(id, inst);
    } else {
      this.keep(id!, inst);
    }
    const methodName = request.method_name ?? "__call__";
    const method = findMethod(inst.object, methodName);
    if (method === undefined) throw new RequestError(`'${className}' object has no method '${methodName}'`);
    const [args, kwargs] = this.decodeArgs(request, request.args, request.kwargs);
    const value = await method.apply(
      inst.object,
      this.callArgs(methodName, { target: entry.target }, args, kwargs),
    );
    inst.info.method_calls++;
    inst.info.last_used = this.now().toISOString();
    return this.answer(request, value, { instance_id: id, instance_info: { ...inst.info } });
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
