//! The host functions of ABI v1. Outside wasm32 there is no host: every call panics, so
//! that the crate still builds (and its pure parts test) on the build machine.

#[cfg(target_arch = "wasm32")]
mod imp {
    #[link(wasm_import_module = "scripthost")]
    extern "C" {
        fn input_len(kind: u32) -> i32;
        fn input_read(kind: u32, ptr: *mut u8, len: u32) -> i32;
        fn tool_call(name_ptr: *const u8, name_len: u32, in_ptr: *const u8, in_len: u32) -> i32;
        fn result_len() -> i32;
        fn result_read(ptr: *mut u8, len: u32) -> i32;
        fn log(level: u32, ptr: *const u8, len: u32);
        fn return_value(ptr: *const u8, len: u32);
        fn fail(ptr: *const u8, len: u32);
    }

    pub fn input_len_(kind: u32) -> i32 {
        unsafe { input_len(kind) }
    }
    pub fn input_read_(kind: u32, b: &mut [u8]) -> i32 {
        unsafe { input_read(kind, b.as_mut_ptr(), b.len() as u32) }
    }
    pub fn tool_call_(name: &[u8], input: &[u8]) -> i32 {
        unsafe { tool_call(name.as_ptr(), name.len() as u32, input.as_ptr(), input.len() as u32) }
    }
    pub fn result_len_() -> i32 {
        unsafe { result_len() }
    }
    pub fn result_read_(b: &mut [u8]) -> i32 {
        unsafe { result_read(b.as_mut_ptr(), b.len() as u32) }
    }
    pub fn log_(level: u32, b: &[u8]) {
        unsafe { log(level, b.as_ptr(), b.len() as u32) }
    }
    pub fn return_value_(b: &[u8]) {
        unsafe { return_value(b.as_ptr(), b.len() as u32) }
    }
    pub fn fail_(b: &[u8]) -> ! {
        unsafe { fail(b.as_ptr(), b.len() as u32) };
        // The host never returns from fail.
        core::arch::wasm32::unreachable()
    }
}

#[cfg(not(target_arch = "wasm32"))]
mod imp {
    const NO_HOST: &str = "scripthost-guest: not running in a scripthost wasm host";
    pub fn input_len_(_: u32) -> i32 {
        panic!("{}", NO_HOST)
    }
    pub fn input_read_(_: u32, _: &mut [u8]) -> i32 {
        panic!("{}", NO_HOST)
    }
    pub fn tool_call_(_: &[u8], _: &[u8]) -> i32 {
        panic!("{}", NO_HOST)
    }
    pub fn result_len_() -> i32 {
        panic!("{}", NO_HOST)
    }
    pub fn result_read_(_: &mut [u8]) -> i32 {
        panic!("{}", NO_HOST)
    }
    pub fn log_(_: u32, _: &[u8]) {
        panic!("{}", NO_HOST)
    }
    pub fn return_value_(_: &[u8]) {
        panic!("{}", NO_HOST)
    }
    pub fn fail_(_: &[u8]) -> ! {
        panic!("{}", NO_HOST)
    }
}

pub use imp::{
    fail_ as fail, input_len_ as input_len, input_read_ as input_read, log_ as log, result_len_ as result_len,
    result_read_ as result_read, return_value_ as return_value, tool_call_ as tool_call,
};
