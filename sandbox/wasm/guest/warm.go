package guest

import (
	"encoding/json"
	"reflect"
)

// Warm encodes each value as JSON and decodes the result into a new value of its
// type, once, and drops the outcome. Call it from init with the types a handler
// encodes and decodes (its state, its tools' inputs and outputs):
//
//	func init() { guest.Warm(State{}, ShipInput{}, ShipOutput{}) }
//
// encoding/json works out how to encode and decode a type the first time it meets
// it and keeps that in caches; init runs once per instance, in _initialize, while
// every invocation starts from the memory _initialize left (ABI.md, "The instance"),
// so work done for a type in a phase is done again in every phase. Done in init, it
// is done once. A type that does not encode is skipped.
func Warm(values ...any) {
	for _, v := range values {
		if v == nil {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		_ = json.Unmarshal(b, reflect.New(reflect.TypeOf(v)).Interface())
	}
}

// The types this package encodes and decodes itself, and the values of a handler's
// result that encoding/json decodes untyped JSON into.
func init() {
	Warm(
		json.RawMessage(`{"k":[1,"s",true,null]}`), []json.RawMessage{json.RawMessage(`1`)},
		map[string]any{"k": []any{1.0, "s", true, nil, map[string]any{}}}, []any{"s"},
		map[string]string{"k": "v"}, []string{"s"}, "s", 0, int64(0), 0.5, true,
		Error{Class: "c"}, []Event{{ID: "i"}}, failure{Message: "m"},
	)
}
