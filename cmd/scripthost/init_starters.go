package main

// The starter workflow of `init --lang`, in each Wasm guest language: the same job as
// the JavaScript starter (starterJS), passing the same fixture.

const starterRustCargo = `[package]
name = "workflow"
version = "0.1.0"
edition = "2021"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
scripthost-guest = { path = "scripthost-guest" }
serde = { version = "1", features = ["derive"] }
serde_json = "1"

[workspace]

[profile.release]
opt-level = "s"
lto = true
codegen-units = 1
panic = "abort"
strip = true
`

const starterRustConfig = `[build]
target = "wasm32-unknown-unknown"

# A 64 KiB stack instead of 1 MiB: every phase runs in a fresh instance, and a smaller
# initial memory makes each one much cheaper.
[target.wasm32-unknown-unknown]
rustflags = ["-C", "link-arg=-zstack-size=65536"]
`

const starterRustBuild = `#!/bin/sh
# Builds workflow.wasm from src/lib.rs, with the crates from crates.io. With
# SCRIPTHOST_CARGO_VENDOR set to a directory of vendored crates (Debian's packaged ones
# in /usr/share/cargo/registry, or what cargo vendor writes), offline from there.
set -eu
cd "$(dirname "$0")"
set --
if [ -n "${SCRIPTHOST_CARGO_VENDOR:-}" ]; then
  set -- --config 'source.crates-io.replace-with="vendored"' \
    --config "source.vendored.directory=\"$SCRIPTHOST_CARGO_VENDOR\"" --config net.offline=true
fi
cargo "$@" build --release --quiet
cp "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/workflow.wasm" workflow.wasm
`

const starterRust = `//! A starter workflow. The producer "scan" notices new files in inbox/ and publishes
//! one event per file; the consumer "greet" reads the file and writes a greeting to
//! outbox/ as its one mutation, then logs what it did.

use scripthost_guest as sh;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeSet;

sh::define!(sh::Workflow::new()
    .topics(&["names"])
    .producer("scan", sh::Producer::new("scan").every("1m").publishes(&["names"]))
    .consumer("greet", sh::Consumer::new(&["names"], "greet_prepare").mutate("greet_mutate").next("greet_next")));

#[derive(Deserialize)]
struct Entry {
    name: String,
    #[serde(default)]
    dir: bool,
}

#[derive(Default, Serialize, Deserialize)]
struct ScanState {
    #[serde(default)]
    seen: Vec<String>,
}

#[no_mangle]
pub extern "C" fn scan() {
    sh::handle(|| {
        let st: ScanState = sh::state::<Option<ScanState>>()?.flatten().unwrap_or_default();
        let mut seen: BTreeSet<String> = st.seen.into_iter().collect();
        let entries: Vec<Entry> = sh::call("Files.list", &json!({"dir": "inbox"}))?;
        for e in entries {
            if e.dir || seen.contains(&e.name) {
                continue;
            }
            sh::publish("names", &e.name, &json!({"file": e.name}))?;
            seen.insert(e.name);
        }
        Ok(ScanState { seen: seen.into_iter().collect() })
    })
}

#[derive(Default, Deserialize)]
struct GreetState {
    #[serde(default)]
    count: u64,
}

#[derive(Deserialize)]
struct NamePayload {
    file: String,
}

#[derive(Serialize, Deserialize)]
struct Greeting {
    file: String,
    name: String,
    count: u64,
}

#[derive(Deserialize)]
struct Content {
    content: String,
}

#[no_mangle]
pub extern "C" fn greet_prepare() {
    sh::handle(|| {
        let st: GreetState = sh::state::<Option<GreetState>>()?.flatten().unwrap_or_default();
        let ev = match sh::peek::<NamePayload>("names", 1)?.into_iter().next() {
            Some(ev) => ev,
            None => return Ok(sh::Prepared::nothing()),
        };
        let file: Content = sh::call("Files.read", &json!({"path": format!("inbox/{}", ev.payload.file)}))?;
        let data = Greeting { file: ev.payload.file, name: file.content.trim().to_string(), count: st.count + 1 };
        Ok(sh::Prepared::reserve("names", vec![ev.id], data))
    })
}

#[no_mangle]
pub extern "C" fn greet_mutate() {
    sh::handle(|| {
        if let Some(d) = sh::prepared::<Option<Greeting>>()?.flatten() {
            let content = format!("Hello, {}!\n", d.name);
            sh::call::<_, Value>("Files.write", &json!({"path": format!("outbox/{}", d.file), "content": content}))?;
        }
        Ok(Value::Null)
    })
}

#[derive(Deserialize)]
struct MutationResult {
    #[serde(default)]
    status: String,
}

#[no_mangle]
pub extern "C" fn greet_next() {
    sh::handle(|| {
        let d = match sh::prepared::<Option<Greeting>>()?.flatten() {
            Some(d) => d,
            None => return Ok(Value::Null), // nothing reserved: keep the state
        };
        let status = sh::mutation_result::<Option<MutationResult>>()?.flatten().map(|r| r.status).unwrap_or_default();
        sh::log!("greeted {} ({})", d.name, status);
        Ok(json!({"count": d.count}))
    })
}
`

const starterASPackage = `{
  "name": "workflow",
  "version": "0.1.0",
  "private": true,
  "devDependencies": {
    "assemblyscript": "0.27.37"
  }
}
`

const starterASConfig = `{
  "entries": ["assembly/index.ts"],
  "options": {
    "runtime": "stub",
    "exportStart": "_initialize",
    "use": ["abort=assembly/scripthost-guest/index/abortHandler"],
    "optimizeLevel": 3,
    "shrinkLevel": 1
  }
}
`

const starterASBuild = `#!/bin/sh
# Builds workflow.wasm from assembly/index.ts (run npm install once first).
set -eu
cd "$(dirname "$0")"
node_modules/.bin/asc assembly/index.ts --config asconfig.json --outFile workflow.wasm
`

const starterAS = `// A starter workflow. The producer "scan" notices new files in inbox/ and publishes
// one event per file; the consumer "greet" reads the file and writes a greeting to
// outbox/ as its one mutation, then logs what it did.

import {
  Consumer, JSONValue, Kind, Producer, Workflow,
  call, define, handle, log, mutationResult, peek, prepared, publish, state,
} from "./scripthost-guest/index";
export { scripthost_abi_version, scripthost_describe } from "./scripthost-guest/index";

define(
  new Workflow()
    .topics(["names"])
    .producer("scan", new Producer("scan").every("1m").publishes(["names"]))
    .consumer("greet", new Consumer(["names"], "greet_prepare").mutate("greet_mutate").next("greet_next")),
);

export function scan(): void {
  handle((): JSONValue => {
    const seen = new Set<string>();
    const st = state();
    const old: JSONValue | null = st == null ? null : st.get("seen");
    if (old != null) for (let i = 0; i < old.length; i++) seen.add(old.at(i).str());
    const entries = call("Files.list", JSONValue.object().setString("dir", "inbox"));
    for (let i = 0; i < entries.length; i++) {
      const e = entries.at(i);
      const name = e.getString("name");
      if (e.getBool("dir") || seen.has(name)) continue;
      publish("names", name, JSONValue.object().setString("file", name));
      seen.add(name);
    }
    const names = seen.values();
    names.sort();
    return JSONValue.object().set("seen", JSONValue.strings(names));
  });
}

export function greet_prepare(): void {
  handle((): JSONValue => {
    const st = state();
    const events = peek("names", 1);
    if (events.length == 0) return JSONValue.object().set("reservations", JSONValue.array()).set("data", JSONValue.null());
    const ev = events.at(0);
    const payload = ev.get("payload");
    const file = payload == null ? "" : payload.getString("file");
    const content = call("Files.read", JSONValue.object().setString("path", "inbox/" + file)).getString("content");
    const count = st == null ? 0 : st.getNumber("count");
    return JSONValue.object()
      .set("reservations", JSONValue.array().push(JSONValue.object().setString("topic", "names").set("ids", JSONValue.strings([ev.getString("id")]))))
      .set("data", JSONValue.object().setString("file", file).setString("name", content.trim()).setNumber("count", count + 1));
  });
}

export function greet_mutate(): void {
  handle((): JSONValue => {
    const d = prepared();
    if (d == null || d.kind != Kind.Object) return JSONValue.null();
    call("Files.write", JSONValue.object().setString("path", "outbox/" + d.getString("file")).setString("content", "Hello, " + d.getString("name") + "!\n"));
    return JSONValue.null();
  });
}

export function greet_next(): void {
  handle((): JSONValue => {
    const d = prepared();
    if (d == null || d.kind != Kind.Object) return JSONValue.null(); // nothing reserved: keep the state
    const result = mutationResult();
    log("greeted " + d.getString("name") + " (" + (result == null ? "" : result.getString("status")) + ")");
    return JSONValue.object().setNumber("count", d.getNumber("count"));
  });
}
`

const starterGoMod = `module workflow

go 1.24

require github.com/scripthost/scripthost v0.0.0

// The guest SDK, copied here so that the build needs no network.
replace github.com/scripthost/scripthost => ./scripthost
`

const starterGoBuild = `#!/bin/sh
# Builds workflow.wasm from main.go.
set -eu
cd "$(dirname "$0")"
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o workflow.wasm .
`

const starterGo = `//go:build wasip1

// A starter workflow. The producer "scan" notices new files in inbox/ and publishes
// one event per file; the consumer "greet" reads the file and writes a greeting to
// outbox/ as its one mutation, then logs what it did.
package main

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/scripthost/scripthost/sandbox/wasm/guest"
)

func init() {
	guest.Define(guest.Workflow{
		Topics: []string{"names"},
		Producers: map[string]guest.Producer{
			"scan": {Schedule: &guest.Schedule{Every: "1m"}, Publishes: []string{"names"}, Handler: "scan"},
		},
		Consumers: map[string]guest.Consumer{
			"greet": {Subscribe: []string{"names"}, Prepare: "greet_prepare", Mutate: "greet_mutate", Next: "greet_next"},
		},
	})
}

// main is not run in a c-shared module; the host calls the exports below.
func main() {}

//go:wasmexport scan
func scan() {
	guest.Handle(func() (any, error) {
		var st struct {
			Seen []string ` + "`json:\"seen\"`" + `
		}
		if err := guest.State(&st); err != nil && err != guest.ErrUndefined {
			return nil, err
		}
		seen := map[string]bool{}
		for _, n := range st.Seen {
			seen[n] = true
		}
		var entries []struct {
			Name string ` + "`json:\"name\"`" + `
			Dir  bool   ` + "`json:\"dir\"`" + `
		}
		if err := guest.Call("Files", "list", map[string]string{"dir": "inbox"}, &entries); err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.Dir || seen[e.Name] {
				continue
			}
			if err := guest.Publish("names", e.Name, map[string]string{"file": e.Name}); err != nil {
				return nil, err
			}
			seen[e.Name] = true
		}
		out := []string{}
		for n := range seen {
			out = append(out, n)
		}
		sort.Strings(out)
		return map[string]any{"seen": out}, nil
	})
}

type greeting struct {
	File  string ` + "`json:\"file\"`" + `
	Name  string ` + "`json:\"name\"`" + `
	Count int    ` + "`json:\"count\"`" + `
}

type reservation struct {
	Topic string   ` + "`json:\"topic\"`" + `
	IDs   []string ` + "`json:\"ids\"`" + `
}

//go:wasmexport greet_prepare
func greetPrepare() {
	guest.Handle(func() (any, error) {
		var st struct {
			Count int ` + "`json:\"count\"`" + `
		}
		if err := guest.State(&st); err != nil && err != guest.ErrUndefined {
			return nil, err
		}
		events, err := guest.Peek("names", 1)
		if err != nil {
			return nil, err
		}
		if len(events) == 0 {
			return map[string]any{"reservations": []reservation{}, "data": nil}, nil
		}
		var p struct {
			File string ` + "`json:\"file\"`" + `
		}
		if err := json.Unmarshal(events[0].Payload, &p); err != nil {
			return nil, err
		}
		var file struct {
			Content string ` + "`json:\"content\"`" + `
		}
		if err := guest.Call("Files", "read", map[string]string{"path": "inbox/" + p.File}, &file); err != nil {
			return nil, err
		}
		return map[string]any{
			"reservations": []reservation{{Topic: "names", IDs: []string{events[0].ID}}},
			"data":         greeting{File: p.File, Name: strings.TrimSpace(file.Content), Count: st.Count + 1},
		}, nil
	})
}

//go:wasmexport greet_mutate
func greetMutate() {
	guest.Handle(func() (any, error) {
		var d *greeting
		if err := guest.Prepared(&d); err != nil || d == nil {
			return nil, err
		}
		return nil, guest.Call("Files", "write", map[string]string{
			"path": "outbox/" + d.File, "content": "Hello, " + d.Name + "!\n"}, nil)
	})
}

//go:wasmexport greet_next
func greetNext() {
	guest.Handle(func() (any, error) {
		var d *greeting
		if err := guest.Prepared(&d); err != nil || d == nil {
			return nil, err // nothing reserved: keep the state
		}
		var result struct {
			Status string ` + "`json:\"status\"`" + `
		}
		if err := guest.MutationResult(&result); err != nil && err != guest.ErrUndefined {
			return nil, err
		}
		guest.Log("greeted " + d.Name + " (" + result.Status + ")")
		return map[string]int{"count": d.Count}, nil
	})
}
`
