//go:build wasip1

package guest

import "unsafe"

// The host functions of ABI v1 (see sandbox/wasm/ABI.md).

//go:wasmimport scripthost input_len
func hostInputLen(kind uint32) int32

//go:wasmimport scripthost input_read
func hostInputRead(kind uint32, ptr unsafe.Pointer, n uint32) int32

//go:wasmimport scripthost tool_call
func hostToolCall(namePtr unsafe.Pointer, nameLen uint32, inPtr unsafe.Pointer, inLen uint32) int32

//go:wasmimport scripthost result_len
func hostResultLen() int32

//go:wasmimport scripthost result_read
func hostResultRead(ptr unsafe.Pointer, n uint32) int32

//go:wasmimport scripthost log
func hostLog(level uint32, ptr unsafe.Pointer, n uint32)

//go:wasmimport scripthost return_value
func hostReturnValue(ptr unsafe.Pointer, n uint32)

//go:wasmimport scripthost fail
func hostFail(ptr unsafe.Pointer, n uint32)

//go:wasmexport scripthost_abi_version
func abiVersion() int32 { return ABIVersion }

//go:wasmexport scripthost_describe
func describe() { Handle(definition) }

func ptr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

type wasmHost struct{}

func (wasmHost) inputLen(kind uint32) int32 { return hostInputLen(kind) }
func (wasmHost) inputRead(kind uint32, b []byte) int32 {
	return hostInputRead(kind, ptr(b), uint32(len(b)))
}
func (wasmHost) toolCall(name, in []byte) int32 {
	return hostToolCall(ptr(name), uint32(len(name)), ptr(in), uint32(len(in)))
}
func (wasmHost) resultLen() int32          { return hostResultLen() }
func (wasmHost) resultRead(b []byte) int32 { return hostResultRead(ptr(b), uint32(len(b))) }
func (wasmHost) log(level uint32, b []byte) {
	hostLog(level, ptr(b), uint32(len(b)))
}
func (wasmHost) returnValue(b []byte) { hostReturnValue(ptr(b), uint32(len(b))) }
func (wasmHost) fail(b []byte) {
	hostFail(ptr(b), uint32(len(b)))
	panic("unreachable: fail returned") // the host never returns from fail
}

var host abi = wasmHost{}
