// The host functions of ABI v1 (sandbox/wasm/ABI.md).

// @ts-ignore: decorator
@external("scripthost", "input_len")
export declare function input_len(kind: u32): i32;
// @ts-ignore: decorator
@external("scripthost", "input_read")
export declare function input_read(kind: u32, ptr: usize, len: u32): i32;
// @ts-ignore: decorator
@external("scripthost", "tool_call")
export declare function tool_call(namePtr: usize, nameLen: u32, inPtr: usize, inLen: u32): i32;
// @ts-ignore: decorator
@external("scripthost", "result_len")
export declare function result_len(): i32;
// @ts-ignore: decorator
@external("scripthost", "result_read")
export declare function result_read(ptr: usize, len: u32): i32;
// @ts-ignore: decorator
@external("scripthost", "log")
export declare function log(level: u32, ptr: usize, len: u32): void;
// @ts-ignore: decorator
@external("scripthost", "return_value")
export declare function return_value(ptr: usize, len: u32): void;
// @ts-ignore: decorator
@external("scripthost", "fail")
export declare function fail(ptr: usize, len: u32): void;
