// What a typed client reads of the app, in types only: handler()'s definition, the exported routes and remote
// functions, by their shape. The SDK never imports the app model (docs/design.md §3), so nothing here names it.

import type {
  EndpointClient,
  JobOptions,
  JobOutput,
  JobStatus,
  RouteAnswer,
  RouteMethod,
  WaitOptions,
  WorkerPin,
} from "./endpoint.js";

/** The shape of what handler() and Endpoint.handler() return, with the handler's input and return. */
interface QueueShape {
  readonly kind: "handler";
  readonly fn: (job: never) => unknown;
}

/** What a route method returns, in its type: `"~route"` is never a real property. */
interface RouteShape {
  readonly "~route"?: {
    readonly method: string;
    readonly path: string;
    readonly input: unknown;
    readonly answer: unknown;
  };
}

/** What remote() returns, in its type: the name Python calls it by. */
interface RemoteShape {
  readonly "~remote"?: { readonly name: string };
}

/** HandlerReturn's shape: what a handler of output O may return. */
type ReturnShape<O> =
  | O
  | Promise<O>
  | Generator<unknown, unknown, undefined>
  | AsyncGenerator<unknown, unknown, undefined>;

/** The queue handler of an app: the definition itself, or a module whose default export is one. */
type QueueOf<App> = App extends QueueShape
  ? App
  : App extends { readonly default: infer D }
    ? D extends QueueShape
      ? D
      : never
    : never;

/** The input a queue handler takes (a schema handler: what the schema accepts). */
export type InputOf<App> = [QueueOf<App>] extends [never]
  ? unknown
  : QueueOf<App> extends { readonly fn: (job: infer J) => unknown }
    ? J extends { readonly input: infer I }
      ? I
      : unknown
    : unknown;

/** The handler's output type O (a generator function's is the generator). */
type Result<App> = QueueOf<App> extends { readonly fn: (job: never) => ReturnShape<infer O> } ? O : unknown;
type Generated = Generator<unknown, unknown, never> | AsyncGenerator<unknown, unknown, never>;
type Yielded<O> = O extends Generator<infer Y, unknown, never> | AsyncGenerator<infer Y, unknown, never>
  ? Y
  : never;

/** A job's output: the handler's return value, or the list of a generator's chunks. */
export type OutputOf<App> = [QueueOf<App>] extends [never]
  ? unknown
  :
      | Exclude<Result<App>, Generated>
      | ([Yielded<Result<App>>] extends [never] ? never : Yielded<Result<App>>[]);

/** What /stream yields: a generator's chunks, or the final output once. */
export type ChunkOf<App> = [QueueOf<App>] extends [never]
  ? unknown
  : Exclude<Result<App>, Generated> | Yielded<Result<App>>;

/** The routes an app declares: a route passed itself, or every route a module exports. */
type RoutesOf<App> = App extends RouteShape
  ? NonNullable<App["~route"]>
  : { [K in keyof App]: App[K] extends RouteShape ? NonNullable<App[K]["~route"]> : never }[keyof App];

/** A declared path as the values a caller may send: `:name` and `{name}` segments take any text. */
type PatternOf<P extends string> = P extends `${infer Head}/:${infer _Name}/${infer Tail}`
  ? `${Head}/${string}/${PatternOf<Tail>}`
  : P extends `${infer Head}/:${infer _Name}`
    ? `${Head}/${string}`
    : P extends `${infer Head}{${infer _Name}}${infer Tail}`
      ? `${Head}${string}${PatternOf<Tail>}`
      : P;

/** The names of a declared path's parameters. */
type ParamsOf<P extends string> = P extends `${string}:${infer Name}/${infer Tail}`
  ? Name | ParamsOf<Tail>
  : P extends `${string}:${infer Name}`
    ? Name
    : P extends `${string}{${infer Name}}${infer Tail}`
      ? Name | ParamsOf<Tail>
      : never;

type RouteWith<App, M extends string> = Extract<RoutesOf<App>, { readonly method: M }>;

/** The paths a caller may call with this method. */
export type PathOf<App, M extends string> =
  RouteWith<App, M> extends infer R
    ? R extends { readonly path: infer P extends string }
      ? PatternOf<P>
      : never
    : never;

/** The declared route a called path reaches. */
type Matched<App, M extends string, Called extends string> =
  RouteWith<App, M> extends infer R
    ? R extends { readonly path: infer P extends string }
      ? Called extends PatternOf<P>
        ? R
        : never
      : never
    : never;

/** The body (or query) a route takes: its arguments less the path's parameters. */
export type BodyOf<App, M extends string, Called extends string> =
  Matched<App, M, Called> extends {
    readonly path: infer P extends string;
    readonly input: infer A;
  }
    ? A extends object
      ? Omit<A, ParamsOf<P>>
      : A
    : never;

/** A body argument: optional when the route needs none. */
export type BodyArg<B> = [B] extends [undefined]
  ? [body?: B]
  : Partial<Record<never, unknown>> extends B
    ? [body?: B]
    : [body: B];

/** The JSON a route answers with (a route that returns a Response answers what it likes). */
export type AnswerOf<App, M extends string, Called extends string> =
  Matched<App, M, Called> extends {
    readonly answer: infer R;
  }
    ? [Exclude<Awaited<R>, Response>] extends [never]
      ? unknown
      : Exclude<Awaited<R>, Response>
    : never;

/** The remote functions an app exports, by the name Python calls them. */
export type RemotesOf<App> = {
  [K in keyof App as App[K] extends RemoteShape & ((...args: never[]) => unknown)
    ? NonNullable<App[K]["~remote"]>["name"]
    : never]: App[K];
};

type RemoteArgs<F> = F extends (...args: infer A) => unknown ? A : never;
type RemoteResult<F> = F extends (...args: never[]) => infer R ? Awaited<R> : never;

/** The calls whose types the app gives. */
type TypedCalls =
  | "run"
  | "runsync"
  | "status"
  | "wait"
  | "stream"
  | "get"
  | "post"
  | "put"
  | "patch"
  | "delete"
  | "route"
  | "routeAnswer"
  | "pin"
  | "call";

/**
 * An endpoint client typed by the app it calls (`endpoint<typeof app>(id)`, `import type * as app` of the worker's
 * module, or `typeof` its handler): jobs take the handler's input and resolve with its output, and route calls
 * reach only the routes the module exports, with their bodies and answers. The same object as EndpointClient.
 */
export interface TypedEndpoint<App> extends Omit<EndpointClient, TypedCalls> {
  run(input: InputOf<App>, options?: JobOptions): Promise<{ id: string; status: JobStatus }>;
  runsync(input: InputOf<App>, options?: JobOptions & WaitOptions): Promise<JobOutput<OutputOf<App>>>;
  status(jobId: string): Promise<JobOutput<OutputOf<App>>>;
  wait(jobId: string, options?: WaitOptions): Promise<JobOutput<OutputOf<App>>>;
  stream(jobId: string, options?: WaitOptions): AsyncGenerator<ChunkOf<App>, void, undefined>;
  get<P extends PathOf<App, "GET">>(
    path: P,
    ...query: BodyArg<BodyOf<App, "GET", P>>
  ): Promise<AnswerOf<App, "GET", P>>;
  post<P extends PathOf<App, "POST">>(
    path: P,
    ...body: BodyArg<BodyOf<App, "POST", P>>
  ): Promise<AnswerOf<App, "POST", P>>;
  put<P extends PathOf<App, "PUT">>(
    path: P,
    ...body: BodyArg<BodyOf<App, "PUT", P>>
  ): Promise<AnswerOf<App, "PUT", P>>;
  patch<P extends PathOf<App, "PATCH">>(
    path: P,
    ...body: BodyArg<BodyOf<App, "PATCH", P>>
  ): Promise<AnswerOf<App, "PATCH", P>>;
  delete<P extends PathOf<App, "DELETE">>(
    path: P,
    ...body: BodyArg<BodyOf<App, "DELETE", P>>
  ): Promise<AnswerOf<App, "DELETE", P>>;
  route<M extends RouteMethod, P extends PathOf<App, M>>(
    method: M,
    path: P,
    ...body: BodyArg<BodyOf<App, M, P>>
  ): Promise<AnswerOf<App, M, P>>;
  routeAnswer<M extends RouteMethod, P extends PathOf<App, M>>(
    method: M,
    path: P,
    ...body: BodyArg<BodyOf<App, M, P>>
  ): Promise<RouteAnswer<AnswerOf<App, M, P>>>;
  pin(workerId: string, mode?: WorkerPin["mode"]): TypedEndpoint<App>;
  /** A function the module exports from remote(name, fn), by its name: its arguments and its result. */
  call<N extends keyof RemotesOf<App> & string>(
    name: N,
    ...args: RemoteArgs<RemotesOf<App>[N]>
  ): Promise<RemoteResult<RemotesOf<App>[N]>>;
}

/** An untyped client without a type argument, a typed one with it. */
export type ClientOf<App> = unknown extends App ? EndpointClient : TypedEndpoint<App>;
