package hostfuncs

import (
	"encoding/json"
	"fmt"

	"github.com/scripthost/scripthost"
)

// ObjectSchema returns the JSON Schema of an object with the given properties (name →
// schema), the required ones, and no others.
func ObjectSchema(props map[string]string, required ...string) json.RawMessage {
	p := map[string]any{}
	for name, typ := range props {
		p[name] = json.RawMessage(typ)
	}
	if required == nil {
		required = []string{}
	}
	b, _ := json.Marshal(map[string]any{
		"type": "object", "properties": p, "required": required, "additionalProperties": false,
	})
	return b
}

// DecodeInput unmarshals a tool's input into v, reporting a malformed input as
// invalid_input of op.
func DecodeInput(op string, input json.RawMessage, v any) error {
	if err := json.Unmarshal(input, v); err != nil {
		return &scripthost.Error{Class: scripthost.ClassLogic, Code: scripthost.CodeInvalidInput, Op: op, Message: fmt.Sprintf("input: %v", err)}
	}
	return nil
}
