package runtime

import (
	"encoding/json"
	"testing"
)

// FuzzParseDefinition: any JSON a workflow's default export could be is a definition
// or an error with a message, never a panic.
func FuzzParseDefinition(f *testing.F) {
	f.Add([]byte(`{"topics":["files","done"],"producers":{"scan":{"schedule":{"every":"5m"},"publishes":["files"],"handler":"scan"}},"consumers":{"process":{"subscribe":["files"],"publishes":["done"],"prepare":"p","mutate":"m","next":"n","onError":{"strategy":"retry","maxRetries":2,"backoff":"exponential","delayMs":500}}}}`))
	f.Add([]byte(`{"producers":{"c":{"schedule":{"cron":"*/5 * * * *"},"handler":"h"}}}`))
	f.Add([]byte(`{"consumers":{"c":{"subscribe":["nope"]}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		if _, err := ParseDefinition(raw); err != nil && err.Error() == "" {
			t.Fatal("got an empty error message")
		}
	})
}
