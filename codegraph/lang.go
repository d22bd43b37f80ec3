package codegraph

import (
	"path"
	"strings"
	"sync"

	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/golang"
	"github.com/smacker/go-tree-sitter/javascript"
	"github.com/smacker/go-tree-sitter/python"
	"github.com/smacker/go-tree-sitter/rust"
	"github.com/smacker/go-tree-sitter/typescript/tsx"
	"github.com/smacker/go-tree-sitter/typescript/typescript"
)

// Language is a grammar and the node types that define symbols in it.
type Language struct {
	// Name is go, rust, javascript, typescript, tsx or python.
	Name    string
	grammar *sitter.Language
	// defs maps a node type to the kind of symbol it defines.
	defs map[string]string
	// names maps a definition node type to the field holding its name, when it is not
	// "name".
	names map[string]string
	// idents are the node types that are identifiers: a reference unless they are a
	// definition's name.
	idents map[string]bool

	// table is what each grammar symbol is, by symbol id, built once: looking a node
	// up by its symbol is one call into the parser instead of a type string per node.
	once  sync.Once
	table []nodeKind
}

// nodeKind is what a grammar symbol means to the index.
type nodeKind struct {
	typ   string
	def   string // the kind of symbol it defines, or ""
	ident bool
}

// kindOf returns what node type sym is; false for a symbol outside the table (the
// error symbol).
func (l *Language) kindOf(sym sitter.Symbol) (nodeKind, bool) {
	l.once.Do(func() {
		n := l.grammar.SymbolCount()
		l.table = make([]nodeKind, n)
		for i := range n {
			typ := l.grammar.SymbolName(sitter.Symbol(i))
			l.table[i] = nodeKind{typ: typ, def: l.defs[typ], ident: l.idents[typ]}
		}
	})
	if int(sym) >= len(l.table) {
		return nodeKind{}, false
	}
	return l.table[sym], true
}

func set(types ...string) map[string]bool {
	m := make(map[string]bool, len(types))
	for _, t := range types {
		m[t] = true
	}
	return m
}

var jsDefs = map[string]string{
	"function_declaration":           "function",
	"generator_function_declaration": "function",
	"class_declaration":              "class",
	"method_definition":              "method",
	"variable_declarator":            "variable",
}

func tsDefs() map[string]string {
	m := map[string]string{
		"abstract_class_declaration": "class",
		"interface_declaration":      "interface",
		"type_alias_declaration":     "type",
		"enum_declaration":           "enum",
		"function_signature":         "function",
		"method_signature":           "method",
		"abstract_method_signature":  "method",
		"internal_module":            "module",
		"public_field_definition":    "field",
		"property_signature":         "field",
	}
	for k, v := range jsDefs {
		m[k] = v
	}
	return m
}

var jsIdents = set("identifier", "property_identifier", "shorthand_property_identifier", "type_identifier")

var languages = map[string]*Language{
	".go": {
		Name: "go", grammar: golang.GetLanguage(),
		defs: map[string]string{
			"function_declaration": "function",
			"method_declaration":   "method",
			"method_spec":          "method",
			"method_elem":          "method",
			"type_spec":            "type",
			"type_alias":           "type",
			"const_spec":           "const",
			"var_spec":             "var",
			"field_declaration":    "field",
		},
		idents: set("identifier", "type_identifier", "field_identifier"),
	},
	".rs": {
		Name: "rust", grammar: rust.GetLanguage(),
		defs: map[string]string{
			"function_item":           "function",
			"function_signature_item": "function",
			"struct_item":             "struct",
			"enum_item":               "enum",
			"union_item":              "union",
			"trait_item":              "trait",
			"impl_item":               "impl",
			"mod_item":                "module",
			"const_item":              "const",
			"static_item":             "static",
			"type_item":               "type",
			"macro_definition":        "macro",
			"field_declaration":       "field",
		},
		names:  map[string]string{"impl_item": "type"},
		idents: set("identifier", "type_identifier", "field_identifier"),
	},
	".js":  {Name: "javascript", grammar: javascript.GetLanguage(), defs: jsDefs, idents: jsIdents},
	".mjs": {Name: "javascript", grammar: javascript.GetLanguage(), defs: jsDefs, idents: jsIdents},
	".cjs": {Name: "javascript", grammar: javascript.GetLanguage(), defs: jsDefs, idents: jsIdents},
	".jsx": {Name: "javascript", grammar: javascript.GetLanguage(), defs: jsDefs, idents: jsIdents},
	".ts":  {Name: "typescript", grammar: typescript.GetLanguage(), defs: tsDefs(), idents: jsIdents},
	".mts": {Name: "typescript", grammar: typescript.GetLanguage(), defs: tsDefs(), idents: jsIdents},
	".tsx": {Name: "tsx", grammar: tsx.GetLanguage(), defs: tsDefs(), idents: jsIdents},
	".py": {
		Name: "python", grammar: python.GetLanguage(),
		defs:   map[string]string{"function_definition": "function", "class_definition": "class"},
		idents: set("identifier"),
	},
}

// LanguageOf returns the language of a file by its extension; false when the file is
// not one the index understands. Declaration files (.d.ts) are TypeScript.
func LanguageOf(name string) (*Language, bool) {
	l, ok := languages[strings.ToLower(path.Ext(name))]
	return l, ok
}
