// The files example workflow written in AssemblyScript and compiled to WebAssembly: the
// same job as scripts/files/workflow.js. A producer notices new files in inbox/ and
// publishes one event per file; a consumer writes an upper-cased copy to outbox/ as its
// one mutation, then publishes a `done` event from next; a second consumer logs what
// was done. Running it again processes nothing twice: the producer remembers what it
// has seen, and event ids are the file names. Build it with ./build.sh.

import {
  Consumer, JSONValue, Kind, Producer, Workflow,
  call, define, handle, log, mutationResult, peek, prepared, publish, state,
} from "../../../sdk/assemblyscript/assembly/index";
export { scripthost_abi_version, scripthost_describe } from "../../../sdk/assemblyscript/assembly/index";

define(
  new Workflow()
    .topics(["files", "done"])
    .producer("scan", new Producer("scan").every("5m").publishes(["files"]))
    .consumer("process", new Consumer(["files"], "process_prepare").publishes(["done"]).mutate("process_mutate").next("process_next"))
    .consumer("report", new Consumer(["done"], "report_prepare").next("report_next")),
);

function member(v: JSONValue | null, key: string): JSONValue | null {
  return v == null ? null : v.get(key);
}

export function scan(): void {
  handle((): JSONValue => {
    const seen = new Set<string>();
    const old = member(state(), "seen");
    if (old != null) for (let i = 0; i < old.length; i++) seen.add(old.at(i).str());
    const entries = call("Files.list", JSONValue.object().setString("dir", "inbox"));
    for (let i = 0; i < entries.length; i++) {
      const e = entries.at(i);
      const name = e.getString("name");
      if (e.getBool("dir") || seen.has(name)) continue;
      publish("files", name, JSONValue.object().setString("name", name));
      seen.add(name);
    }
    const names = seen.values();
    names.sort();
    return JSONValue.object().set("seen", JSONValue.strings(names));
  });
}

export function process_prepare(): void {
  handle((): JSONValue => {
    const st = state();
    const events = peek("files", 1);
    if (events.length == 0) return JSONValue.object().set("reservations", JSONValue.array()).set("data", JSONValue.null());
    const ev = events.at(0);
    const payload = ev.get("payload");
    const name = payload == null ? "" : payload.getString("name");
    const file = call("Files.read", JSONValue.object().setString("path", "inbox/" + name));
    const processed = st == null ? 0 : st.getNumber("processed");
    return JSONValue.object()
      .set("reservations", JSONValue.array().push(JSONValue.object().setString("topic", "files").set("ids", JSONValue.strings([ev.getString("id")]))))
      .set("data", JSONValue.object().setString("name", name).setString("content", file.getString("content")).setNumber("processed", processed + 1));
  });
}

export function process_mutate(): void {
  handle((): JSONValue => {
    const p = prepared();
    if (p == null || p.kind != Kind.Object) return JSONValue.null();
    call("Files.write", JSONValue.object().setString("path", "outbox/" + p.getString("name")).setString("content", p.getString("content").toUpperCase()));
    return JSONValue.null();
  });
}

export function process_next(): void {
  handle((): JSONValue => {
    const p = prepared();
    if (p == null || p.kind != Kind.Object) return JSONValue.null(); // nothing reserved: keep the state
    const result = mutationResult();
    const status = result == null ? "" : result.getString("status");
    const name = p.getString("name");
    publish("done", name, JSONValue.object().setString("name", name).setString("status", status));
    return JSONValue.object().setNumber("processed", p.getNumber("processed"));
  });
}

export function report_prepare(): void {
  handle((): JSONValue => {
    const events = peek("done", 100);
    const ids: string[] = [];
    const names: string[] = [];
    for (let i = 0; i < events.length; i++) {
      const e = events.at(i);
      ids.push(e.getString("id"));
      const payload = e.get("payload");
      names.push(payload == null ? "" : payload.getString("name"));
    }
    const reservations = JSONValue.array();
    if (ids.length > 0) reservations.push(JSONValue.object().setString("topic", "done").set("ids", JSONValue.strings(ids)));
    return JSONValue.object().set("reservations", reservations).set("data", JSONValue.strings(names));
  });
}

export function report_next(): void {
  handle((): JSONValue => {
    const p = prepared();
    if (p != null && p.kind == Kind.Array && p.length > 0) {
      const names: string[] = [];
      for (let i = 0; i < p.length; i++) names.push(p.at(i).str());
      log("done: " + names.join(", "));
    }
    return JSONValue.null();
  });
}
