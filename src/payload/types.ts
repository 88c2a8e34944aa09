// The remote-function wire types, field for field as docs/toolkit.md §2.1–§2.2 define them (snake_case on the wire).

/** The body of a remote call (docs/toolkit.md §2.1); `args` / `kwargs` carry base64 cloudpickle unless `serialization_format` is "json". */
export interface FunctionRequest {
  function_name?: string | null;
  function_code?: string | null;
  args?: unknown[];
  kwargs?: Record<string, unknown>;
  dependencies?: string[] | null;
  system_dependencies?: string[] | null;
  modules?: Record<string, string>;
  execution_type?: "function" | "class";
  class_name?: string | null;
  class_code?: string | null;
  constructor_args?: unknown[];
  constructor_kwargs?: Record<string, unknown>;
  method_name?: string;
  instance_id?: string | null;
  create_new_instance?: boolean;
  accelerate_downloads?: boolean;
  serialization_format?: "cloudpickle" | "json" | string;
}

/** Class-mode metadata (docs/toolkit.md §2.2, WT src/class_executor.py). */
export interface InstanceInfo {
  class_name: string;
  created_at: string;
  method_calls: number;
  last_used: string;
}

/** The answer to a remote call; every key is always present, nulls included (`FunctionResponse.model_dump()`). */
export interface FunctionResponse {
  success: boolean;
  result: string | null;
  json_result: unknown;
  error: string | null;
  stdout: string | null;
  instance_id: string | null;
  instance_info: InstanceInfo | null;
}
