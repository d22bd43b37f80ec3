package bundle

// EsbuildBundle is Build with esbuild's own interop helpers, for comparing them with
// the ones Build puts in their place.
var EsbuildBundle = esbuildBundle
