// Package dts ships the TypeScript declarations of the JavaScript sandbox: the phase
// inputs, the built-in tools, the workflow definition and the web-platform globals.
// `scripthost init --ts` and `scripthost types` write them beside a workflow so an
// editor or tsc checks it as it is written.
package dts

import "embed"

// FS holds every declaration file of the sandbox (*.d.ts).
//
//go:embed *.d.ts
var FS embed.FS
