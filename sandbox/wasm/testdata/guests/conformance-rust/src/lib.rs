//! The Rust guest behind the sandboxtest behaviours (one export per behaviour), built
//! for wasm32-wasi with the Rust SDK (sdk/rust). Build it with ./build.sh.

use scripthost_guest as sh;
use serde_json::{json, Map, Value};

sh::define!(sh::Workflow::new()
    .topics(&["in", "out"])
    .consumer("c", sh::Consumer::new(&["in"], "c_prepare").publishes(&["out"])));

#[no_mangle]
pub extern "C" fn c_prepare() {
    sh::handle(|| Ok("prepared"))
}

fn raw(kind: u32) -> Value {
    sh::raw_input(kind).and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or(Value::Null)
}

#[no_mangle]
pub extern "C" fn echo_globals() {
    sh::handle(|| Ok(json!({"state": raw(0), "prepared": raw(1), "mutationResult": raw(2), "args": sh::args()})))
}

/// Changes its decoded copy of __state__ every way it can, then reads __state__ again:
/// the host's value is out of the guest's reach.
#[no_mangle]
pub extern "C" fn globals_readonly() {
    sh::handle(|| {
        let mut s: Map<String, Value> = sh::state()?.unwrap_or_default();
        s.insert("x".into(), json!("changed"));
        s.remove("a");
        if let Some(Value::Array(l)) = s.get_mut("list") {
            l.push(json!(2));
        }
        drop(s);
        Ok(sh::state::<Value>()?)
    })
}

#[no_mangle]
pub extern "C" fn call_tool() {
    sh::handle(|| sh::call::<_, Value>("Echo.say", &json!({"text": "hi"})))
}

#[no_mangle]
pub extern "C" fn tool_error_class() {
    sh::handle(|| sh::call::<_, Value>("Fail.network", &json!({})))
}

#[no_mangle]
pub extern "C" fn catch_tool_error() {
    sh::handle(|| match sh::call::<_, Value>("Fail.network", &json!({})) {
        Err(e) if e.is_tool_error() => Ok(json!({"class": e.class, "code": e.code})),
        _ => Err(sh::Error::new("no tool error")),
    })
}

#[no_mangle]
pub extern "C" fn terminate() {
    sh::handle(|| {
        let _ = sh::call::<_, Value>("Fail.terminate", &json!({}));
        Ok("caught")
    })
}

#[no_mangle]
pub extern "C" fn tool_panic() {
    sh::handle(|| sh::call::<_, Value>("Fail.panic", &json!({})))
}

#[no_mangle]
pub extern "C" fn tool_flood() {
    sh::handle(|| -> sh::Result<Value> {
        let mut n = 0u64;
        loop {
            let _ = sh::call::<_, Value>("Echo.say", &json!({ "i": n }));
            n += 1;
        }
    })
}

#[no_mangle]
pub extern "C" fn throw() {
    sh::handle(|| -> sh::Result<Value> { panic!("boom") })
}

#[no_mangle]
pub extern "C" fn fail_error() {
    sh::handle(|| -> sh::Result<Value> { Err(sh::Error::new("boom from an error")) })
}

#[no_mangle]
pub extern "C" fn console() {
    sh::handle(|| {
        sh::log!("one");
        sh::warn!("two");
        sh::error!("three");
        Ok(Value::Null)
    })
}

#[no_mangle]
pub extern "C" fn console_flood() {
    sh::handle(|| {
        let line = "x".repeat(100);
        for _ in 0..1000 {
            sh::log!("{}", line);
        }
        Ok("done")
    })
}

static mut SINK: u64 = 0;

#[no_mangle]
pub extern "C" fn endless_loop() {
    let mut i = 0u64;
    loop {
        unsafe { core::ptr::write_volatile(core::ptr::addr_of_mut!(SINK), i) };
        i = i.wrapping_add(1);
    }
}

// Recursion through a function pointer the optimizer cannot see through, so that the
// frames stay on the wasm call stack instead of becoming a loop. Each frame keeps many
// values alive across the call (as wasm locals, not in linear memory), so that the
// host's call stack fills in fewer calls.
type Recurse = fn(u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64) -> u64;
static mut RECURSE: Recurse = recurse;

#[allow(clippy::too_many_arguments)]
fn recurse(n: u64, a0: u64, a1: u64, a2: u64, a3: u64, a4: u64, a5: u64, a6: u64, a7: u64, a8: u64, a9: u64, a10: u64, a11: u64, a12: u64, a13: u64, a14: u64, a15: u64, a16: u64, a17: u64, a18: u64, a19: u64, a20: u64, a21: u64, a22: u64, a23: u64) -> u64 {
    let f = unsafe { core::ptr::read_volatile(core::ptr::addr_of!(RECURSE)) };
    f(n + 1, a0.wrapping_add(n), a1.wrapping_add(n), a2.wrapping_add(n), a3.wrapping_add(n), a4.wrapping_add(n), a5.wrapping_add(n), a6.wrapping_add(n), a7.wrapping_add(n), a8.wrapping_add(n), a9.wrapping_add(n), a10.wrapping_add(n), a11.wrapping_add(n), a12.wrapping_add(n), a13.wrapping_add(n), a14.wrapping_add(n), a15.wrapping_add(n), a16.wrapping_add(n), a17.wrapping_add(n), a18.wrapping_add(n), a19.wrapping_add(n), a20.wrapping_add(n), a21.wrapping_add(n), a22.wrapping_add(n), a23.wrapping_add(n)) ^ a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7 ^ a8 ^ a9 ^ a10 ^ a11 ^ a12 ^ a13 ^ a14 ^ a15 ^ a16 ^ a17 ^ a18 ^ a19 ^ a20 ^ a21 ^ a22 ^ a23
}

#[no_mangle]
pub extern "C" fn recursion() {
    sh::handle(|| Ok(recurse(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
}

static mut HOG: Vec<Vec<u8>> = Vec::new();

#[no_mangle]
pub extern "C" fn memory_hog() {
    sh::handle(|| -> sh::Result<Value> {
        let mut b = vec![b'x'];
        loop {
            b.extend_from_slice(&b.clone());
            unsafe { HOG.push(b.clone()) };
        }
    })
}

#[no_mangle]
pub extern "C" fn huge_output() {
    sh::handle(|| Ok("x".repeat(1_000_000)))
}

static mut COUNTER: u64 = 0;

#[no_mangle]
pub extern "C" fn fresh_instance() {
    sh::handle(|| {
        unsafe { COUNTER += 1 };
        Ok(unsafe { COUNTER })
    })
}

#[link(wasm_import_module = "wasi_snapshot_preview1")]
extern "C" {
    fn random_get(buf: *mut u8, len: usize) -> u16;
}

fn random() -> f64 {
    let mut b = [0u8; 8];
    unsafe { random_get(b.as_mut_ptr(), b.len()) };
    (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

#[no_mangle]
pub extern "C" fn deterministic() {
    sh::handle(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_err(|e| e.to_string())?;
        Ok(json!({"now": now.as_millis() as u64, "random": [random(), random(), random()]}))
    })
}

#[no_mangle]
pub extern "C" fn phase() {
    sh::handle(|| Ok(sh::phase()))
}

#[no_mangle]
pub extern "C" fn publish() {
    sh::handle(|| sh::publish("out", "id-1", &json!({"name": "a"})))
}

#[no_mangle]
pub extern "C" fn peek() {
    sh::handle(|| sh::peek::<Value>("in", 3).map(|evs| evs.into_iter().map(|e| json!({"id": e.id, "topic": e.topic, "payload": e.payload})).collect::<Vec<_>>()))
}
