// The AssemblyScript SDK for scripthost Wasm handlers: the guest side of ABI v1
// (sandbox/wasm/ABI.md). A workflow's entry file declares its definition at top level
// with define(), re-exports the SDK's ABI exports, and exports one function per
// handler that wraps its body in handle():
//
//   import { define, handle, call, JSONValue, Workflow, Producer } from "@scripthost/guest";
//   export { scripthost_abi_version, scripthost_describe } from "@scripthost/guest";
//   define(new Workflow().topics(["files"]).producer("scan", new Producer("scan").every("5m")));
//   export function scan(): void { handle((): JSONValue => call("Files.list", ...)); }
//
// Build with the options in asconfig.json: --runtime stub (each phase runs in a fresh
// instance, so nothing is ever collected), --exportStart _initialize, and
// --use abort=... so that an abort reports its message and location as the error.

import * as abi from "./abi";
import { JSONValue, parse, quote } from "./json";

export { JSONValue, Kind, parse, Parsed, quote } from "./json";
export { Workflow, Producer, Consumer, OnError } from "./define";
import { Workflow } from "./define";

/** The guest ABI version this SDK speaks. */
export const ABI_VERSION: i32 = 1;

export function scripthost_abi_version(): i32 {
  return ABI_VERSION;
}

let definition: Workflow | null = null;

/** Sets the definition scripthost_describe returns; call it at the top level. */
export function define(w: Workflow): void {
  definition = w;
}

export function scripthost_describe(): void {
  const d = definition;
  if (d == null) {
    failMessage("no workflow definition: call define() at the top level of the entry file", 0);
    return;
  }
  returnValue(d.toJSON());
}

// Input kinds of ABI v1.
const KIND_STATE: u32 = 0;
const KIND_PREPARED: u32 = 1;
const KIND_MUTATION_RESULT: u32 = 2;
const KIND_PHASE: u32 = 3;
const KIND_FUNCTION: u32 = 4;
const KIND_ARGS: u32 = 5;
const KIND_ARG0: u32 = 16;

/** The raw JSON text of input kind, or null when the phase does not define it. */
export function rawInput(kind: u32): string | null {
  const n = abi.input_len(kind);
  if (n < 0) return null;
  const buf = new ArrayBuffer(n);
  abi.input_read(kind, changetype<usize>(buf), <u32>n);
  return String.UTF8.decode(buf);
}

function decode(kind: u32): JSONValue | null {
  const raw = rawInput(kind);
  if (raw == null) return null;
  const p = parse(raw);
  if (p.err != "") failMessage("input " + kind.toString() + " is not JSON: " + p.err, 0);
  return p.value;
}

/** __state__ (producer, prepare), or null when it is not defined. */
export function state(): JSONValue | null {
  return decode(KIND_STATE);
}
/** __prepared__ (mutate, next), or null when it is not defined. */
export function prepared(): JSONValue | null {
  return decode(KIND_PREPARED);
}
/** __mutationResult__ (next), or null when it is not defined. */
export function mutationResult(): JSONValue | null {
  return decode(KIND_MUTATION_RESULT);
}
/** Argument i, or null when there is none. */
export function arg(i: u32): JSONValue | null {
  return decode(KIND_ARG0 + i);
}
/** Every argument, as a JSON array. */
export function args(): JSONValue {
  const v = decode(KIND_ARGS);
  return v == null ? JSONValue.array() : v;
}
/** The phase the handler runs in ("producer", "prepare", "mutate", "next"; "" outside a phase). */
export function phase(): string {
  const v = decode(KIND_PHASE);
  return v == null ? "" : v.str();
}
/** The name of the function being invoked. */
export function functionName(): string {
  const v = decode(KIND_FUNCTION);
  return v == null ? "" : v.str();
}

/** A classified error from a tool. */
export class ToolError {
  constructor(
    public errorClass: string,
    public code: string,
    public message: string,
    /** The tool call that failed, numbered within the invocation. */
    public call: i32,
  ) {}
  toString(): string {
    return this.errorClass + " error (" + this.code + "): " + this.message;
  }
}

/** What tryCall returns: the tool's output, or its error. */
export class ToolResult {
  constructor(public value: JSONValue, public error: ToolError | null) {}
  get ok(): bool {
    return this.error == null;
  }
}

/** Calls tool "Namespace.method" with JSON text and returns its output or its error. */
export function tryCallRaw(tool: string, input: string): ToolResult {
  const name = String.UTF8.encode(tool);
  const inp = String.UTF8.encode(input);
  const status = abi.tool_call(changetype<usize>(name), <u32>name.byteLength, changetype<usize>(inp), <u32>inp.byteLength);
  const n = abi.result_len();
  const buf = new ArrayBuffer(n);
  abi.result_read(changetype<usize>(buf), <u32>n);
  const p = parse(String.UTF8.decode(buf));
  if (p.err != "") failMessage(tool + ": undecodable result: " + p.err, 0);
  if (status == 0) return new ToolResult(p.value, null);
  const e = p.value;
  return new ToolResult(
    JSONValue.null(),
    new ToolError(e.getString("class"), e.getString("code"), e.getString("message"), <i32>e.getNumber("call")),
  );
}

/** Calls tool "Namespace.method" (e.g. "Files.list") and returns its output or its error. */
export function tryCall(tool: string, input: JSONValue): ToolResult {
  return tryCallRaw(tool, input.stringify());
}

/**
 * Calls tool "Namespace.method" and returns its output. A tool error ends the handler
 * with that error, re-raised with its class (as an uncaught tool error in JS).
 */
export function call(tool: string, input: JSONValue): JSONValue {
  const r = tryCall(tool, input);
  const e = r.error;
  if (e != null) failTool(e);
  return r.value;
}

/** Publishes one event (Topics.publish): allowed in producers and in next. */
export function publish(topic: string, id: string, payload: JSONValue): void {
  call("Topics.publish", JSONValue.object().setString("topic", topic).setString("id", id).set("payload", payload));
}

/** Up to limit pending events of topic (Topics.peek), each {id, topic, payload, attempt}. */
export function peek(topic: string, limit: i32): JSONValue {
  return call("Topics.peek", JSONValue.object().setString("topic", topic).setNumber("limit", <f64>limit));
}

function console(level: u32, line: string): void {
  const b = String.UTF8.encode(line);
  abi.log(level, changetype<usize>(b), <u32>b.byteLength);
}
/** A console line at level log. */
export function log(line: string): void {
  console(0, line);
}
/** A console line at level warn. */
export function warn(line: string): void {
  console(1, line);
}
/** A console line at level error. */
export function error(line: string): void {
  console(2, line);
}

/** Sets the handler's result; the last call wins. */
export function returnValue(v: JSONValue): void {
  const b = String.UTF8.encode(v.stringify());
  abi.return_value(changetype<usize>(b), <u32>b.byteLength);
}

function failJSON(f: JSONValue): void {
  const b = String.UTF8.encode(f.stringify());
  abi.fail(changetype<usize>(b), <u32>b.byteLength);
  unreachable(); // the host never returns from fail
}

function failMessage(message: string, call: i32): void {
  const f = JSONValue.object().setString("message", message == "" ? "handler failed" : message);
  if (call != 0) f.setNumber("call", <f64>call);
  failJSON(f);
}

/** Ends the handler with a script error; does not return. */
export function fail(message: string): void {
  failMessage(message, 0);
}

/** Ends the handler with a tool's error, re-raised with its class; does not return. */
export function failTool(e: ToolError): void {
  failMessage(e.toString(), e.call);
}

/**
 * Runs a handler body and sets its result. Errors end the handler from where they
 * happen (fail, failTool, an uncaught tool error in call, abort).
 */
export function handle(body: () => JSONValue): void {
  returnValue(body());
}

/**
 * The abort handler (asc --use abort=...): reports an abort (a failed assert, a
 * thrown error, an out-of-range index) with its message, file and line as the
 * handler's error.
 */
export function abortHandler(message: string | null, fileName: string | null, line: u32, column: u32): void {
  const f = JSONValue.object().setString("message", message == null ? "abort" : message);
  if (fileName != null) f.setString("file", fileName);
  if (line != 0) f.setNumber("line", <f64>line).setNumber("column", <f64>column);
  failJSON(f);
}
