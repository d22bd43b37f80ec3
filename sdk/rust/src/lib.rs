//! The Rust SDK for scripthost Wasm handlers: the guest side of ABI v1
//! (`sandbox/wasm/ABI.md`).
//!
//! A workflow is a `cdylib` crate built for `wasm32-unknown-unknown` (or `wasm32-wasi`)
//! that declares its definition with [`define!`] and exports one `extern "C"` function
//! per handler, each wrapping its body in [`handle`]:
//!
//! ```ignore
//! use scripthost_guest as sh;
//!
//! sh::define!(sh::Workflow::new().topics(&["files"]).producer(
//!     "scan",
//!     sh::Producer::new("scan").every("5m").publishes(&["files"]),
//! ));
//!
//! #[no_mangle]
//! pub extern "C" fn scan() {
//!     sh::handle(|| {
//!         let entries: Vec<serde_json::Value> = sh::call("Files.list", &serde_json::json!({"dir": "inbox"}))?;
//!         Ok(entries.len())
//!     })
//! }
//! ```
//!
//! Linking the crate exports `scripthost_abi_version`; [`define!`] exports
//! `scripthost_describe`. Every buffer is allocated by the guest: the host never calls
//! back into it.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::panic::Location;

pub use serde_json::{json, Value};

mod abi;
mod def;

pub use def::{Consumer, OnError, Producer, Schedule, Workflow};

/// The guest ABI version this SDK speaks.
pub const ABI_VERSION: i32 = 1;

#[no_mangle]
pub extern "C" fn scripthost_abi_version() -> i32 {
    ABI_VERSION
}

// Input kinds of ABI v1.
const KIND_STATE: u32 = 0;
const KIND_PREPARED: u32 = 1;
const KIND_MUTATION_RESULT: u32 = 2;
const KIND_PHASE: u32 = 3;
const KIND_FUNCTION: u32 = 4;
const KIND_ARGS: u32 = 5;
const KIND_ARG0: u32 = 16;

/// An error a handler returns or a tool reports.
///
/// A tool error carries the tool's `class` (`logic`, `auth`, `permission`, `network`,
/// `internal`), its `code` and the number of the failed `call`: returned from a
/// handler, it re-raises the host's original error, class and cause included. Any other
/// error ends the handler as a `logic` script error located where it was made.
#[derive(Debug, Clone, Deserialize)]
pub struct Error {
    #[serde(default)]
    pub class: String,
    #[serde(default)]
    pub code: String,
    #[serde(default)]
    pub message: String,
    /// The tool call that failed (numbered from 1 within the invocation); 0 when the
    /// error did not come from a tool.
    #[serde(default)]
    pub call: u32,
    #[serde(skip)]
    file: &'static str,
    #[serde(skip)]
    line: u32,
}

impl Error {
    /// A script error with this message, located at the caller.
    #[track_caller]
    pub fn new(message: impl Into<String>) -> Self {
        let loc = Location::caller();
        Error {
            class: String::new(),
            code: String::new(),
            message: message.into(),
            call: 0,
            file: loc.file(),
            line: loc.line(),
        }
    }

    /// Whether this error came from a tool (and is re-raised with its class).
    pub fn is_tool_error(&self) -> bool {
        self.call != 0
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.class.is_empty(), self.code.is_empty()) {
            (true, _) => f.write_str(&self.message),
            (false, true) => write!(f, "{} error: {}", self.class, self.message),
            (false, false) => write!(f, "{} error ({}): {}", self.class, self.code, self.message),
        }
    }
}

impl std::error::Error for Error {}

impl From<serde_json::Error> for Error {
    #[track_caller]
    fn from(e: serde_json::Error) -> Self {
        Error::new(format!("json: {}", e))
    }
}

impl From<String> for Error {
    #[track_caller]
    fn from(s: String) -> Self {
        Error::new(s)
    }
}

impl From<&str> for Error {
    #[track_caller]
    fn from(s: &str) -> Self {
        Error::new(s)
    }
}

/// The result type of handlers and tool calls.
pub type Result<T> = std::result::Result<T, Error>;

/// The raw JSON of input `kind`, or `None` when the phase does not define it.
fn input(kind: u32) -> Option<Vec<u8>> {
    let n = abi::input_len(kind);
    if n < 0 {
        return None;
    }
    let mut b = vec![0u8; n as usize];
    abi::input_read(kind, &mut b);
    Some(b)
}

#[track_caller]
fn decode<T: DeserializeOwned>(kind: u32) -> Result<Option<T>> {
    match input(kind) {
        None => Ok(None),
        Some(b) => serde_json::from_slice(&b).map(Some).map_err(|e| Error::new(format!("decode input: {}", e))),
    }
}

/// `__state__` (producer, prepare), or `None` when it is not defined. A stored `null`
/// decodes as `None` for an `Option` target.
#[track_caller]
pub fn state<T: DeserializeOwned>() -> Result<Option<T>> {
    decode(KIND_STATE)
}

/// `__prepared__` (mutate, next), or `None` when it is not defined.
#[track_caller]
pub fn prepared<T: DeserializeOwned>() -> Result<Option<T>> {
    decode(KIND_PREPARED)
}

/// `__mutationResult__` (next), or `None` when it is not defined.
#[track_caller]
pub fn mutation_result<T: DeserializeOwned>() -> Result<Option<T>> {
    decode(KIND_MUTATION_RESULT)
}

/// Argument `i`, or `None` when there is no such argument.
#[track_caller]
pub fn arg<T: DeserializeOwned>(i: u32) -> Result<Option<T>> {
    decode(KIND_ARG0 + i)
}

/// Every argument as JSON values.
pub fn args() -> Vec<Value> {
    decode(KIND_ARGS).ok().flatten().unwrap_or_default()
}

/// The raw JSON of input `kind` (see the ABI's input table), or `None`.
pub fn raw_input(kind: u32) -> Option<Vec<u8>> {
    input(kind)
}

/// The phase the handler runs in (`producer`, `prepare`, `mutate`, `next`; empty
/// outside a phase).
pub fn phase() -> String {
    decode(KIND_PHASE).ok().flatten().unwrap_or_default()
}

/// The name of the function being invoked.
pub fn function() -> String {
    decode(KIND_FUNCTION).ok().flatten().unwrap_or_default()
}

/// Calls tool `"Namespace.method"` with raw JSON input and returns its raw JSON output.
pub fn call_raw(tool: &str, input: &[u8]) -> Result<Vec<u8>> {
    let status = abi::tool_call(tool.as_bytes(), input);
    let mut out = vec![0u8; abi::result_len().max(0) as usize];
    abi::result_read(&mut out);
    if status == 0 {
        return Ok(out);
    }
    Err(serde_json::from_slice::<Error>(&out)
        .unwrap_or_else(|_| Error::new(format!("{}: undecodable error {}", tool, String::from_utf8_lossy(&out)))))
}

/// Calls tool `"Namespace.method"` (e.g. `"Files.list"`) with `input` encoded as JSON
/// and decodes its output. A tool failure is an [`Error`] with the tool's class and code.
#[track_caller]
pub fn call<I: Serialize + ?Sized, O: DeserializeOwned>(tool: &str, input: &I) -> Result<O> {
    let loc = Location::caller();
    let at = |mut e: Error| {
        e.file = loc.file();
        e.line = loc.line();
        e
    };
    let b = serde_json::to_vec(input).map_err(|e| at(Error::new(format!("{}: encode input: {}", tool, e))))?;
    let out = call_raw(tool, &b).map_err(at)?;
    serde_json::from_slice(&out).map_err(|e| at(Error::new(format!("{}: decode output: {}", tool, e))))
}

/// One event [`peek`] returns.
#[derive(Debug, Clone, Deserialize)]
pub struct Event<P = Value> {
    pub id: String,
    pub topic: String,
    pub payload: P,
    #[serde(default)]
    pub attempt: u32,
}

/// Publishes one event (`Topics.publish`): allowed in producers and in `next`.
#[track_caller]
pub fn publish<P: Serialize + ?Sized>(topic: &str, id: &str, payload: &P) -> Result<()> {
    #[derive(Serialize)]
    struct In<'a, P: ?Sized> {
        topic: &'a str,
        id: &'a str,
        payload: &'a P,
    }
    call::<_, Value>("Topics.publish", &In { topic, id, payload }).map(|_| ())
}

/// Up to `limit` pending events of `topic` (`Topics.peek`): allowed in `prepare`.
#[track_caller]
pub fn peek<P: DeserializeOwned>(topic: &str, limit: u32) -> Result<Vec<Event<P>>> {
    call("Topics.peek", &json!({"topic": topic, "limit": limit}))
}

/// What a consumer's `prepare` returns: the events it reserves and the data handed to
/// `mutate` and `next`.
#[derive(Debug, Clone, Serialize)]
pub struct Prepared<D: Serialize> {
    pub reservations: Vec<Reservation>,
    pub data: Option<D>,
}

/// Events of one topic reserved by `prepare`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reservation {
    pub topic: String,
    pub ids: Vec<String>,
}

impl<D: Serialize> Prepared<D> {
    /// Nothing reserved, no data.
    pub fn nothing() -> Self {
        Prepared { reservations: Vec::new(), data: None }
    }

    /// Reserves `ids` of `topic` (an empty list reserves nothing) with `data`.
    pub fn reserve(topic: &str, ids: Vec<String>, data: D) -> Self {
        let reservations = if ids.is_empty() { Vec::new() } else { vec![Reservation { topic: topic.to_string(), ids }] };
        Prepared { reservations, data: Some(data) }
    }
}

/// Console levels.
#[derive(Debug, Clone, Copy)]
pub enum Level {
    Log = 0,
    Warn = 1,
    Error = 2,
}

/// Writes a console line.
pub fn console(level: Level, line: &str) {
    abi::log(level as u32, line.as_bytes());
}

/// `log!("...", args)`: a console line at level log, formatted as by `format!`.
#[macro_export]
macro_rules! log {
    ($($arg:tt)*) => { $crate::console($crate::Level::Log, &format!($($arg)*)) };
}

/// `warn!("...", args)`: a console line at level warn.
#[macro_export]
macro_rules! warn {
    ($($arg:tt)*) => { $crate::console($crate::Level::Warn, &format!($($arg)*)) };
}

/// `error!("...", args)`: a console line at level error.
#[macro_export]
macro_rules! error {
    ($($arg:tt)*) => { $crate::console($crate::Level::Error, &format!($($arg)*)) };
}

/// Sets the handler's result to `v` encoded as JSON; the last call wins.
pub fn return_value<T: Serialize + ?Sized>(v: &T) -> Result<()> {
    let b = serde_json::to_vec(v).map_err(|e| Error::new(format!("encode result: {}", e)))?;
    abi::return_value(&b);
    Ok(())
}

#[derive(Serialize)]
struct Failure<'a> {
    message: &'a str,
    #[serde(skip_serializing_if = "is_zero")]
    call: u32,
    #[serde(skip_serializing_if = "str::is_empty")]
    file: &'a str,
    #[serde(skip_serializing_if = "is_zero")]
    line: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Ends the handler with `err`; never returns. A tool error is re-raised with the
/// host's original class; anything else is a script error at the place it was made.
pub fn fail(err: &Error) -> ! {
    fail_at(&err.to_string(), err.call, err.file, err.line)
}

fn fail_at(message: &str, call: u32, file: &str, line: u32) -> ! {
    let f = Failure { message: if message.is_empty() { "handler failed" } else { message }, call, file, line };
    let b = serde_json::to_vec(&f).unwrap_or_else(|_| message.as_bytes().to_vec());
    abi::fail(&b)
}

/// Runs a handler body: its `Ok` value becomes the handler's result (JSON), its `Err`
/// ends the handler with that error. A panic inside ends the handler with the panic's
/// message, file and line.
pub fn handle<T: Serialize, F: FnOnce() -> Result<T>>(body: F) {
    install_panic_hook();
    match body() {
        Ok(v) => {
            if let Err(e) = return_value(&v) {
                fail(&e)
            }
        }
        Err(e) => fail(&e),
    }
}

/// Reports a panic as the phase's error (message and location) through `fail`, which
/// unwinds the guest: nothing after the panic runs.
fn install_panic_hook() {
    static mut INSTALLED: bool = false;
    // A fresh instance runs one invocation on one thread: no race.
    unsafe {
        if INSTALLED {
            return;
        }
        INSTALLED = true;
    }
    std::panic::set_hook(Box::new(|info| {
        let msg = if let Some(s) = info.payload().downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = info.payload().downcast_ref::<String>() {
            s.clone()
        } else {
            "panic".to_string()
        };
        let (file, line) = info.location().map(|l| (l.file(), l.line())).unwrap_or(("", 0));
        fail_at(&format!("panic: {}", msg), 0, file, line)
    }));
}

#[doc(hidden)]
pub fn __describe<T: Serialize>(def: T) {
    handle(|| Ok(def))
}

/// Declares the workflow definition and exports `scripthost_describe`, which returns
/// it. The expression is anything that serializes to the definition JSON: a
/// [`Workflow`] or a `json!` literal.
#[macro_export]
macro_rules! define {
    ($def:expr) => {
        #[no_mangle]
        pub extern "C" fn scripthost_describe() {
            $crate::__describe($def)
        }
    };
}

