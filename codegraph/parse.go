package codegraph

import (
	"context"
	"fmt"

	sitter "github.com/smacker/go-tree-sitter"
)

// Span locates a piece of a file: a byte range [StartByte, EndByte) and the 1-based
// line and column (in bytes) where it starts and ends.
type Span struct {
	StartByte int `json:"start_byte"`
	EndByte   int `json:"end_byte"`
	StartLine int `json:"start_line"`
	StartCol  int `json:"start_column"`
	EndLine   int `json:"end_line"`
	EndCol    int `json:"end_column"`
}

// Symbol is a definition: a function, method, type, class, constant and the like.
type Symbol struct {
	Path string `json:"path"`
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Container is the enclosing symbol: the receiver type of a Go method, the class
	// of a method, the type of a Rust impl block; "" at the top level.
	Container string `json:"container,omitempty"`
	Span
}

// QualifiedName is Container.Name, or Name at the top level.
func (s Symbol) QualifiedName() string {
	if s.Container == "" {
		return s.Name
	}
	return s.Container + "." + s.Name
}

// Ref is an identifier that is not a definition's own name: a use of Name.
type Ref struct {
	Path string `json:"path"`
	Name string `json:"name"`
	Span
}

// SyntaxError is where the parser found text the grammar does not accept.
type SyntaxError struct {
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

// Parsed is what one file holds.
type Parsed struct {
	Language string
	Symbols  []Symbol
	Refs     []Ref
	// Errors lists syntax errors, at most maxSyntaxErrors of them.
	Errors []SyntaxError
}

const maxSyntaxErrors = 20

// Parse parses src as a file of language l and extracts its symbols, references and
// syntax errors. path is only copied into the rows.
func Parse(ctx context.Context, l *Language, path string, src []byte) (*Parsed, error) {
	p := sitter.NewParser()
	defer p.Close()
	p.SetLanguage(l.grammar)
	tree, err := p.ParseCtx(ctx, nil, src)
	if err != nil {
		return nil, fmt.Errorf("codegraph: parse %s: %w", path, err)
	}
	defer tree.Close()
	root := tree.RootNode()
	w := &walker{lang: l, path: path, src: src, names: map[uint32]bool{}, out: &Parsed{Language: l.Name}, broken: root.HasError()}
	c := sitter.NewTreeCursor(root)
	defer c.Close()
	w.visit(c)
	if root.HasError() && len(w.out.Errors) == 0 {
		w.out.Errors = append(w.out.Errors, SyntaxError{Line: 1, Column: 1, Message: "syntax error"})
	}
	return w.out, nil
}

type walker struct {
	lang *Language
	path string
	src  []byte
	// names holds the start bytes of definition names, which are not references.
	names map[uint32]bool
	// stack holds the enclosing definitions.
	stack []frame
	out   *Parsed
	// broken is set when the tree has errors: only then are nodes asked whether they
	// are error or missing nodes.
	broken bool
}

type frame struct {
	name, kind string
}

func (w *walker) visit(c *sitter.TreeCursor) {
	n := c.CurrentNode()
	pushed := w.enter(n)
	if c.GoToFirstChild() {
		for {
			w.visit(c)
			if !c.GoToNextSibling() {
				break
			}
		}
		c.GoToParent()
	}
	if pushed {
		w.stack = w.stack[:len(w.stack)-1]
	}
}

// enter records n and reports whether it pushed a container frame.
func (w *walker) enter(n *sitter.Node) bool {
	if w.broken && (n.IsError() || n.IsMissing()) {
		if len(w.out.Errors) < maxSyntaxErrors {
			msg := "unexpected " + quote(n.Content(w.src), 40)
			if n.IsMissing() {
				msg = "missing " + n.Type()
			}
			p := n.StartPoint()
			w.out.Errors = append(w.out.Errors, SyntaxError{Line: int(p.Row) + 1, Column: int(p.Column) + 1, Message: msg})
		}
		return false
	}
	k, ok := w.lang.kindOf(n.Symbol())
	if !ok {
		typ := n.Type()
		k = nodeKind{typ: typ, def: w.lang.defs[typ], ident: w.lang.idents[typ]}
	}
	if k.def != "" {
		return w.define(n, k.typ, k.def)
	}
	if k.ident && !w.names[n.StartByte()] {
		w.out.Refs = append(w.out.Refs, Ref{Path: w.path, Name: n.Content(w.src), Span: spanOf(n)})
	}
	return false
}

func (w *walker) define(n *sitter.Node, typ, kind string) bool {
	field := "name"
	if f, ok := w.lang.names[typ]; ok {
		field = f
	}
	nameNode := n.ChildByFieldName(field)
	if nameNode == nil {
		return false
	}
	if kind == "impl" {
		// An impl block is not a symbol of its own: it names the container of its
		// functions.
		id := firstIdent(nameNode)
		if id == nil {
			return false
		}
		w.stack = append(w.stack, frame{name: id.Content(w.src), kind: kind})
		return true
	}
	if !w.lang.idents[nameNode.Type()] {
		return false // a destructuring pattern, not one name
	}
	container, outer := "", ""
	if len(w.stack) > 0 {
		top := w.stack[len(w.stack)-1]
		container, outer = top.name, top.kind
	}
	switch kind {
	case "variable", "var", "const", "field":
		// Locals are not symbols of the file.
		for _, f := range w.stack {
			if f.kind == "function" || f.kind == "method" {
				return false
			}
		}
	case "function":
		switch outer {
		case "class", "struct", "interface", "trait", "impl":
			kind = "method"
		}
	}
	if typ == "method_declaration" { // Go: the receiver's type is the container
		if recv := n.ChildByFieldName("receiver"); recv != nil {
			if id := firstTypeIdent(recv); id != nil {
				container = id.Content(w.src)
			}
		}
	}
	span := spanOf(declaration(n))
	name := nameNode.Content(w.src)
	for _, nn := range w.allNames(n, nameNode) {
		w.names[nn.StartByte()] = true
		w.out.Symbols = append(w.out.Symbols, Symbol{Path: w.path, Name: nn.Content(w.src), Kind: kind, Container: container, Span: span})
	}
	w.stack = append(w.stack, frame{name: name, kind: kind})
	return true
}

// allNames returns first and the other names a declaration gives at once
// (var a, b int; X, Y float64 in a struct), each a symbol with the declaration's span.
func (w *walker) allNames(n, first *sitter.Node) []*sitter.Node {
	names := []*sitter.Node{first}
	switch n.Type() {
	case "var_spec", "const_spec", "field_declaration":
	default:
		return names
	}
	for i := 0; i < int(n.ChildCount()); i++ {
		if n.FieldNameForChild(i) != "name" {
			continue
		}
		if c := n.Child(i); c != nil && c.StartByte() != first.StartByte() && w.lang.idents[c.Type()] {
			names = append(names, c)
		}
	}
	return names
}

// declaration widens a definition to the whole of it as written: a spec or
// declarator to the declaration around it when it is that declaration's only one (so
// that the span covers "type T …" or "const x = …"), and a definition to the export
// statement or decorators wrapping it.
func declaration(n *sitter.Node) *sitter.Node {
	n = single(n)
	if p := n.Parent(); p != nil {
		switch p.Type() {
		case "export_statement", "decorated_definition":
			return p
		}
	}
	return n
}

func single(n *sitter.Node) *sitter.Node {
	switch n.Type() {
	case "type_spec", "type_alias", "const_spec", "var_spec", "variable_declarator":
	default:
		return n
	}
	p := n.Parent()
	if p == nil {
		return n
	}
	specs := 0
	for i := 0; i < int(p.NamedChildCount()); i++ {
		if p.NamedChild(i).Type() != "comment" {
			specs++
		}
	}
	if specs != 1 {
		return n
	}
	switch p.Type() {
	case "type_declaration", "const_declaration", "var_declaration", "lexical_declaration", "variable_declaration":
		return p
	}
	return n
}

// firstIdent returns n if it is an identifier, or its first identifier descendant.
func firstIdent(n *sitter.Node) *sitter.Node {
	switch n.Type() {
	case "identifier", "type_identifier":
		return n
	}
	for i := 0; i < int(n.NamedChildCount()); i++ {
		if id := firstIdent(n.NamedChild(i)); id != nil {
			return id
		}
	}
	return nil
}

func firstTypeIdent(n *sitter.Node) *sitter.Node {
	if n.Type() == "type_identifier" {
		return n
	}
	for i := 0; i < int(n.NamedChildCount()); i++ {
		if id := firstTypeIdent(n.NamedChild(i)); id != nil {
			return id
		}
	}
	return nil
}

func spanOf(n *sitter.Node) Span {
	s, e := n.StartPoint(), n.EndPoint()
	return Span{StartByte: int(n.StartByte()), EndByte: int(n.EndByte()),
		StartLine: int(s.Row) + 1, StartCol: int(s.Column) + 1, EndLine: int(e.Row) + 1, EndCol: int(e.Column) + 1}
}

func quote(s string, max int) string {
	if len(s) > max {
		s = s[:max] + "…"
	}
	return fmt.Sprintf("%q", s)
}
