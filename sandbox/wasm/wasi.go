package wasm

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// WASI errno values.
const (
	errnoBadf    = 8
	errnoNotsup  = 58
	stdioFDCount = 3
)

// instantiateWASI adds WASI preview 1 to r with the functions that would change an
// instance's file descriptor table replaced. A guest has stdin, stdout and stderr and
// nothing else (no preopened directories, no sockets); closing, renumbering or
// reconfiguring them is refused with ENOTSUP, any other descriptor is EBADF as in
// wazero. So the descriptors are never part of an instance's state, and a reset
// instance has what a fresh one has.
func instantiateWASI(ctx context.Context, r wazero.Runtime) error {
	b := r.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	refuse := func(name string, params ...api.ValueType) {
		fn := api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
			errno := uint64(errnoNotsup)
			for i, t := range params {
				if t == api.ValueTypeI32 && (i == 0 || name == "fd_renumber") && api.DecodeU32(stack[i]) >= stdioFDCount {
					errno = errnoBadf
				}
			}
			stack[0] = errno
		})
		b.NewFunctionBuilder().WithGoModuleFunction(fn, params, []api.ValueType{api.ValueTypeI32}).Export(name)
	}
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	refuse("fd_close", i32)
	refuse("fd_renumber", i32, i32)
	refuse("fd_fdstat_set_flags", i32, i32)
	refuse("fd_fdstat_set_rights", i32, i64, i64)
	_, err := b.Instantiate(ctx)
	return err
}
