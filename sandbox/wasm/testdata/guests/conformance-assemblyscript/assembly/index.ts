// The AssemblyScript guest behind the sandboxtest behaviours (one export per
// behaviour), built with the AssemblyScript SDK (sdk/assemblyscript). Build it with
// ./build.sh.

import {
  Consumer, JSONValue, Workflow,
  args, call, define, error, failTool, handle, log, parse, peek as peekEvents, phase as currentPhase, publish as publishEvent,
  rawInput, state, tryCall, warn,
} from "../../../../../../sdk/assemblyscript/assembly/index";
export { scripthost_abi_version, scripthost_describe } from "../../../../../../sdk/assemblyscript/assembly/index";

define(new Workflow().topics(["in", "out"]).consumer("c", new Consumer(["in"], "c_prepare").publishes(["out"])));

export function c_prepare(): void {
  handle((): JSONValue => JSONValue.string("prepared"));
}

function raw(kind: u32): JSONValue {
  const s = rawInput(kind);
  return s == null ? JSONValue.null() : parse(s).value;
}

export function echo_globals(): void {
  handle((): JSONValue =>
    JSONValue.object().set("state", raw(0)).set("prepared", raw(1)).set("mutationResult", raw(2)).set("args", args()),
  );
}

// Changes its decoded copy of __state__ every way it can, then reads __state__ again:
// the host's value is out of the guest's reach.
export function globals_readonly(): void {
  handle((): JSONValue => {
    const s = state();
    if (s != null) {
      s.setString("x", "changed");
      const list = s.get("list");
      if (list != null) list.push(JSONValue.number(2));
      s.set("a", JSONValue.null());
    }
    const again = state();
    return again == null ? JSONValue.null() : again;
  });
}

export function call_tool(): void {
  handle((): JSONValue => call("Echo.say", JSONValue.object().setString("text", "hi")));
}

export function tool_error_class(): void {
  handle((): JSONValue => call("Fail.network", JSONValue.object()));
}

export function catch_tool_error(): void {
  handle((): JSONValue => {
    const e = tryCall("Fail.network", JSONValue.object()).error;
    if (e == null) throw new Error("no tool error");
    return JSONValue.object().setString("class", e.errorClass).setString("code", e.code);
  });
}

export function terminate(): void {
  handle((): JSONValue => {
    tryCall("Fail.terminate", JSONValue.object());
    return JSONValue.string("caught");
  });
}

export function tool_panic(): void {
  handle((): JSONValue => {
    const e = tryCall("Fail.panic", JSONValue.object()).error;
    if (e != null) failTool(e);
    return JSONValue.null();
  });
}

export function tool_flood(): void {
  handle((): JSONValue => {
    for (let n = 0; ; n++) tryCall("Echo.say", JSONValue.object().setNumber("i", <f64>n));
    return JSONValue.null();
  });
}

function throwBoom(): void {
  handle((): JSONValue => {
    throw new Error("boom");
  });
}

export { throwBoom as throw };

export function console(): void {
  handle((): JSONValue => {
    log("one");
    warn("two");
    error("three");
    return JSONValue.null();
  });
}

export function console_flood(): void {
  handle((): JSONValue => {
    const line = "x".repeat(100);
    for (let i = 0; i < 1000; i++) log(line);
    return JSONValue.string("done");
  });
}

let sink: i64 = 0;

export function endless_loop(): void {
  for (let i: i64 = 0; ; i++) sink = i;
}

function recurse(n: i64): i64 {
  return recurse(n + 1) ^ n;
}

export function recursion(): void {
  handle((): JSONValue => JSONValue.number(<f64>recurse(0)));
}

const hog: ArrayBuffer[] = [];

export function memory_hog(): void {
  handle((): JSONValue => {
    for (let n = 1; ; n *= 2) hog.push(new ArrayBuffer(n));
    return JSONValue.null();
  });
}

export function huge_output(): void {
  handle((): JSONValue => JSONValue.string("x".repeat(1_000_000)));
}

let counter = 0;

export function fresh_instance(): void {
  handle((): JSONValue => {
    counter++;
    return JSONValue.number(<f64>counter);
  });
}

// @ts-ignore: decorator
@external("wasi_snapshot_preview1", "clock_time_get")
declare function clock_time_get(id: u32, precision: u64, out: usize): u16;
// @ts-ignore: decorator
@external("wasi_snapshot_preview1", "random_get")
declare function random_get(buf: usize, len: usize): u16;

function random(): f64 {
  const b = new ArrayBuffer(8);
  random_get(changetype<usize>(b), 8);
  return <f64>(load<u64>(changetype<usize>(b)) >> 11) / <f64>(<u64>1 << 53);
}

export function deterministic(): void {
  handle((): JSONValue => {
    const b = new ArrayBuffer(8);
    clock_time_get(0, 1, changetype<usize>(b)); // realtime, nanoseconds
    const ms = load<u64>(changetype<usize>(b)) / 1_000_000;
    const r = JSONValue.array().push(JSONValue.number(random())).push(JSONValue.number(random())).push(JSONValue.number(random()));
    return JSONValue.object().setNumber("now", <f64>ms).set("random", r);
  });
}

export function phase(): void {
  handle((): JSONValue => JSONValue.string(currentPhase()));
}

export function publish(): void {
  handle((): JSONValue => {
    publishEvent("out", "id-1", JSONValue.object().setString("name", "a"));
    return JSONValue.null();
  });
}

export function peek(): void {
  handle((): JSONValue => peekEvents("in", 3));
}
