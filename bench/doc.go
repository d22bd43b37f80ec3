// Package bench compares scripthost with other durable-execution engines on the same
// machine in the same run. It is a separate module so that the peers' dependencies
// stay out of the main module; it has no code of its own beside its benchmarks.
package bench
