package dts

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestGenerate(t *testing.T) {
	src, err := Generate([]Tool{
		{Namespace: "Shop", Method: "charge", Description: "Charge a card.",
			Input: json.RawMessage(`{"type":"object","required":["amount","currency"],"properties":{
				"amount":{"type":"integer","description":"in cents"},
				"currency":{"enum":["eur","usd"]},
				"tags":{"type":"array","items":{"type":"string"}},
				"meta":{"type":"object","additionalProperties":{"type":"string"}},
				"note":{"type":["string","null"]}}}`),
			Output: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)},
		{Namespace: "Shop", Method: "get-order", ReadOnly: true,
			Input: json.RawMessage(`{"oneOf":[{"type":"object","properties":{"id":{"const":"x"}}},{"type":"string"}]}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := string(src)
	for _, want := range []string{
		"declare const Shop: {",
		"/** Charge a card. A mutation: only in a consumer's mutate phase, once. */",
		"charge(input: {",
		"    /** in cents */\n    amount: number;",
		`    currency: "eur" | "usd";`,
		"    meta?: {\n      [key: string]: string;\n    };",
		"    note?: string | null;",
		"    tags?: Array<string>;",
		"  }): Promise<{\n    id: string;\n  }>;",
		"Read-only: in a producer",
		`  "get-order"(input: {`,
		`    id?: "x";`,
		"  } | string): Promise<unknown>;",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("declarations lack %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "charge(") > strings.Index(got, `"get-order"(`) {
		t.Errorf("methods are not sorted:\n%s", got)
	}
}

func TestGenerateRefusesABadNamespace(t *testing.T) {
	if _, err := Generate([]Tool{{Namespace: "my-shop", Method: "x"}}); err == nil || !strings.Contains(err.Error(), `"my-shop"`) {
		t.Errorf("got %v, want an error naming the namespace", err)
	}
}

// Every shipped declaration file is TypeScript that declares something; tsc checks
// them for real in the CLI's validate tests.
func TestShippedDeclarations(t *testing.T) {
	b, err := FS.ReadFile("scripthost.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"declare const __state__", "declare const __prepared__", "declare const __mutationResult__",
		"declare const Topics", "declare const console", "interface ToolError", "interface Workflow", "interface Producer", "interface Consumer"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("scripthost.d.ts lacks %q", want)
		}
	}
}
