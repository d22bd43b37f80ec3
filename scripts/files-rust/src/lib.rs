//! The files example workflow written in Rust and compiled to WebAssembly: the same job
//! as scripts/files/workflow.js. A producer notices new files in inbox/ and publishes one
//! event per file; a consumer writes an upper-cased copy to outbox/ as its one mutation,
//! then publishes a `done` event from next; a second consumer logs what was done.
//! Running it again processes nothing twice: the producer remembers what it has seen,
//! and event ids are the file names.
//!
//! Build it with ./build.sh: `cargo build --release` here, then the module is
//! target/wasm32-unknown-unknown/release/files_rust.wasm (build.sh copies it to
//! workflow.wasm).

use scripthost_guest as sh;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeSet;

sh::define!(sh::Workflow::new()
    .topics(&["files", "done"])
    .producer("scan", sh::Producer::new("scan").every("5m").publishes(&["files"]))
    .consumer(
        "process",
        sh::Consumer::new(&["files"], "process_prepare")
            .publishes(&["done"])
            .mutate("process_mutate")
            .next("process_next"),
    )
    .consumer("report", sh::Consumer::new(&["done"], "report_prepare").next("report_next")));

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

#[derive(Serialize, Deserialize)]
struct FilePayload {
    name: String,
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
            sh::publish("files", &e.name, &FilePayload { name: e.name.clone() })?;
            seen.insert(e.name);
        }
        Ok(ScanState { seen: seen.into_iter().collect() })
    })
}

#[derive(Default, Serialize, Deserialize)]
struct ProcessState {
    #[serde(default)]
    processed: u64,
}

#[derive(Serialize, Deserialize)]
struct Work {
    name: String,
    content: String,
    processed: u64,
}

#[derive(Deserialize)]
struct FileContent {
    content: String,
}

#[no_mangle]
pub extern "C" fn process_prepare() {
    sh::handle(|| {
        let st: ProcessState = sh::state::<Option<ProcessState>>()?.flatten().unwrap_or_default();
        let events = sh::peek::<FilePayload>("files", 1)?;
        let ev = match events.into_iter().next() {
            Some(ev) => ev,
            None => return Ok(sh::Prepared::nothing()),
        };
        let file: FileContent = sh::call("Files.read", &json!({"path": format!("inbox/{}", ev.payload.name)}))?;
        let work = Work { name: ev.payload.name, content: file.content, processed: st.processed + 1 };
        Ok(sh::Prepared::reserve("files", vec![ev.id], work))
    })
}

#[no_mangle]
pub extern "C" fn process_mutate() {
    sh::handle(|| {
        if let Some(w) = sh::prepared::<Option<Work>>()?.flatten() {
            let path = format!("outbox/{}", w.name);
            sh::call::<_, Value>("Files.write", &json!({"path": path, "content": w.content.to_uppercase()}))?;
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
pub extern "C" fn process_next() {
    sh::handle(|| {
        let w = match sh::prepared::<Option<Work>>()?.flatten() {
            Some(w) => w,
            None => return Ok(Value::Null), // nothing reserved: keep the state
        };
        let result = sh::mutation_result::<Option<MutationResult>>()?.flatten();
        let status = result.map(|r| r.status).unwrap_or_default();
        sh::publish("done", &w.name, &json!({"name": w.name, "status": status}))?;
        Ok(json!(ProcessState { processed: w.processed }))
    })
}

#[no_mangle]
pub extern "C" fn report_prepare() {
    sh::handle(|| {
        let events = sh::peek::<FilePayload>("done", 100)?;
        let ids: Vec<String> = events.iter().map(|e| e.id.clone()).collect();
        let names: Vec<String> = events.into_iter().map(|e| e.payload.name).collect();
        Ok(sh::Prepared::reserve("done", ids, names))
    })
}

#[no_mangle]
pub extern "C" fn report_next() {
    sh::handle(|| {
        let names = sh::prepared::<Option<Vec<String>>>()?.flatten().unwrap_or_default();
        if !names.is_empty() {
            sh::log!("done: {}", names.join(", "));
        }
        Ok(Value::Null)
    })
}
