//go:build !wasip1

package guest

// Outside a wasip1 build there is no host: every call panics with ErrNoHost. The
// package still compiles so that tools such as go vet see the guest code.
type noHost struct{}

func (noHost) inputLen(uint32) int32          { panic(ErrNoHost) }
func (noHost) inputRead(uint32, []byte) int32 { panic(ErrNoHost) }
func (noHost) toolCall(_, _ []byte) int32     { panic(ErrNoHost) }
func (noHost) resultLen() int32               { panic(ErrNoHost) }
func (noHost) resultRead([]byte) int32        { panic(ErrNoHost) }
func (noHost) log(uint32, []byte)             { panic(ErrNoHost) }
func (noHost) returnValue([]byte)             { panic(ErrNoHost) }
func (noHost) fail([]byte)                    { panic(ErrNoHost) }

var host abi = noHost{}
