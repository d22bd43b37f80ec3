// Declarations of the scripthost JavaScript sandbox: the phase inputs, the built-in
// tools that are not generated from a registry (Topics, console), tool errors and the
// workflow definition. The Files and plan tools, and any HTTP or embedder tools, are
// declared by `scripthost types` (tools.d.ts), from their JSON Schemas.
//
// Type a workflow with `satisfies Workflow` so every handler is checked as you write:
//
//   export default { topics: ['in'], consumers: { c: { subscribe: ['in'], prepare() { return null; } } } } satisfies Workflow;

/** Any value that survives JSON: what handlers receive, return, store and publish. */
type JSONValue = string | number | boolean | null | JSONValue[] | { [key: string]: JSONValue };

/** The handler's saved state before the run, in every phase (read-only). */
declare const __state__: JSONValue | undefined;
/** What prepare returned as `data`, in the mutate and next phases (read-only). */
declare const __prepared__: JSONValue | undefined;
/** The outcome of the mutate phase, in the next phase (read-only). */
declare const __mutationResult__: MutationResult;

/** How a mutate phase ended, as next sees it. */
type MutationResult =
  | { status: 'applied'; result: JSONValue }
  | { status: 'skipped' }
  | { status: 'failed'; error: { class: ErrorClass; code?: string; message: string } }
  | { status: 'none' };

/** The class of a tool error decides what happens to the run. */
type ErrorClass = 'logic' | 'auth' | 'permission' | 'network' | 'internal';

/**
 * What a failed tool call rejects with. It is an Error (catch it and read `class` and
 * `code`); there is no ToolError constructor in the sandbox, so test `e.name`.
 */
interface ToolError extends Error {
  name: 'ToolError';
  /** logic → failed:logic; auth, permission → paused:approval; network → paused:transient (retried); internal → failed:internal. */
  class: ErrorClass;
  /** A machine-readable code, e.g. phase_violation, second_mutation, validation, not_found. */
  code: string;
  /** The tool called, Namespace.method. */
  tool: string;
}

/** A pending event of a subscribed topic. */
interface TopicEvent<P = JSONValue> {
  id: string;
  topic: string;
  payload: P;
  /** How many runs have reserved it before (1 the first time). */
  attempt: number;
}

declare const Topics: {
  /** Pending events of a subscribed topic, oldest first. Only in prepare. */
  peek<P = JSONValue>(input: { topic: string; limit?: number }): Promise<TopicEvent<P>[]>;
  /**
   * Publish on a declared topic when the run commits (stored with the commit, never
   * twice). The id defaults to a hash of the payload; an id the topic has is ignored.
   * Only in a producer and in next.
   */
  publish(input: { topic: string; id?: string; payload: JSONValue }): Promise<{ id: string; topic: string }>;
};

/** Captured, capped and printed by the host; not a side effect. */
declare const console: {
  log(...args: unknown[]): void;
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
  debug(...args: unknown[]): void;
};

/** A stub: a workflow is a single file; require throws. */
declare function require(name: string): never;

/** What prepare returns: the events to reserve, the data mutate and next receive, an optional wake-up. */
interface Prepared<D extends JSONValue = JSONValue> {
  reservations?: { topic: string; ids: string[] }[];
  data?: D;
  /** Run this consumer again then even without new events: milliseconds since the epoch or an ISO 8601 time. */
  wakeAt?: number | string;
}

/** What before and after receive. */
interface PhaseInfo {
  phase: 'producer' | 'prepare' | 'mutate' | 'next';
  handler: string;
  workflow: string;
  run: string;
  attempt: number;
  /** after only: what the phase returned. */
  result?: JSONValue;
}

/** What happens when a phase fails. */
interface OnError {
  strategy?: 'fail' | 'retry' | 'pause';
  maxRetries?: number;
  backoff?: 'fixed' | 'exponential';
  delayMs?: number;
  /** Before each retry of this policy, with no tools: returns the state the retry starts from (undefined keeps it). */
  onRetry?(error: { class: ErrorClass; code?: string; message: string; attempt: number }, state: JSONValue | undefined): Awaitable<JSONValue | undefined | void>;
}

/** Hooks and error policy shared by producers and consumers. Hooks run in the read-only hook phase: read tools only. */
interface Lifecycle<S> {
  /** Must return a boolean; false: skip this time (recorded as a skipped run). */
  guard?(state: S | undefined): boolean | Promise<boolean>;
  before?(info: PhaseInfo): void | Promise<void>;
  after?(info: PhaseInfo): void | Promise<void>;
  onError?: OnError;
}

type Awaitable<T> = T | Promise<T>;

/** A handler that runs on a schedule and publishes events (phase producer). */
interface Producer<S extends JSONValue = any> extends Lifecycle<S> {
  schedule: { every: string | number } | { cron: string };
  publishes?: string[];
  /** Returns the new state; undefined keeps the old one. */
  handler(state: S | undefined): Awaitable<S | undefined | void>;
  subscribe?: never;
  prepare?: never;
  mutate?: never;
  next?: never;
}

/** A handler that runs prepare → mutate → next on the events of the topics it subscribes to. */
interface Consumer<S extends JSONValue = any, D extends JSONValue = any> extends Lifecycle<S> {
  subscribe: string[];
  /** Only next may publish, so a consumer that publishes needs next. */
  publishes?: string[];
  /** Read, peek and reserve. null or undefined: nothing to do this time. */
  prepare(state: S | undefined): Awaitable<Prepared<D> | null | undefined | void>;
  /** Exactly one side effect. */
  mutate?(data: D | undefined): Awaitable<unknown>;
  /** Publish; returns the new state (undefined keeps the old one). */
  next?(data: D | undefined, result: MutationResult): Awaitable<S | undefined | void>;
  /** Where a definite failure of the mutation goes: 'fail' (default) or on to next. */
  onMutationFailure?: 'fail' | 'next' | { strategy: 'fail' | 'next'; events?: 'consume' | 'release' };
  schedule?: never;
  handler?: never;
}

/** A workflow: the default export of workflow.js / workflow.ts. */
interface Workflow {
  /** The workflow's name in the ledger (default: derived from the file's path). */
  name?: string;
  topics: string[];
  producers?: Record<string, Producer>;
  consumers?: Record<string, Consumer>;
}
