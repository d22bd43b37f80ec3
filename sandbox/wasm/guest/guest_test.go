package guest

import (
	"encoding/json"
	"testing"
)

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Class: "network", Code: "connection_reset", Message: "reset"}, "network error (connection_reset): reset"},
		{&Error{Class: "logic", Message: "bad"}, "logic error: bad"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

func TestDefinition(t *testing.T) {
	defer func() { declared = nil }()
	declared = nil
	if _, err := definition(); err == nil {
		t.Error("got no error without Define, want one")
	}
	Define(json.RawMessage(`{"topics":`))
	if _, err := definition(); err == nil {
		t.Error("got no error for invalid JSON, want one")
	}
	Define(Workflow{Topics: []string{"a"}, Consumers: map[string]Consumer{"c": {Subscribe: []string{"a"}, Prepare: "c_prepare"}}})
	def, err := definition()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(def)
	if want := `{"topics":["a"],"consumers":{"c":{"subscribe":["a"],"prepare":"c_prepare"}}}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func TestNoHostPanics(t *testing.T) {
	defer func() {
		if r := recover(); r != ErrNoHost {
			t.Errorf("got panic %v, want ErrNoHost", r)
		}
	}()
	Log("x")
}
