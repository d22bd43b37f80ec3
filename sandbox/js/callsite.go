package js

import "github.com/scripthost/scripthost/sandbox"

// callSite finds the innermost frame of the module on the script's stack: where the
// tool call running now was made (sandbox.CallSite).
func (in *instance) callSite() sandbox.CallSiteFunc {
	return func() (string, int, int, bool) {
		for _, f := range in.vm.CaptureCallStack(0, nil) {
			if p := f.Position(); p.Filename == in.mod.name && p.Line > 0 {
				return p.Filename, p.Line, p.Column + 1, true
			}
		}
		return "", 0, 0, false
	}
}
