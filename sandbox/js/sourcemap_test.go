package js_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/sandbox"
	"github.com/scripthost/scripthost/sandbox/js"
	"github.com/scripthost/scripthost/sandbox/sandboxtest"
)

// TestSourceMapURLNeverRead points sourceMappingURL comments (in the module, in eval
// and in new Function) at a FIFO: opening it for reading blocks until a writer comes,
// so a host that tried to read it would hang, and the test would report it.
func TestSourceMapURLNeverRead(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "map.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	tests := []struct{ name, file, code string }{
		{"module js", "wf.js", "export default { f: { h() { throw new Error('boom') } } }\n//# sourceMappingURL=" + fifo + "\n"},
		{"module ts", "wf.ts", "export default { f: { h(): number { throw new Error('boom') } } }\n//# sourceMappingURL=file://" + fifo + "\n"},
		{"relative", "wf.js", "export default { f: { h() { throw new Error('boom') } } }\n//# sourceMappingURL=" + filepath.Base(fifo) + "\n"},
		{"eval", "wf.js", fmt.Sprintf("export default { f: { h() { eval(%q) } } }\n", "throw new Error('boom')\n//# sourceMappingURL=file://"+fifo)},
		{"function", "wf.js", fmt.Sprintf("export default { f: { h() { new Function(%q)() } } }\n", "throw new Error('boom')\n//# sourceMappingURL=file://"+fifo)},
	}
	eng := js.New(js.Options{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				p, err := eng.Load(context.Background(), sandbox.Source{Name: filepath.Join(filepath.Dir(fifo), tt.file), Code: []byte(tt.code)})
				if err != nil {
					done <- err
					return
				}
				_, err = p.Invoke(context.Background(), sandbox.Invocation{Function: "f.h", Tools: sandboxtest.NewTools()})
				done <- err
			}()
			select {
			case err := <-done:
				// Dynamic code is disabled outright; the parser option behind it is a
				// second line of defence.
				if !scripthost.IsLogic(err) || !strings.Contains(err.Error(), "boom") && !strings.Contains(err.Error(), "disabled") {
					t.Errorf("got %v, want the script's logic error", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Load or Invoke blocked: the host opened the FIFO named by sourceMappingURL")
			}
		})
	}
}
