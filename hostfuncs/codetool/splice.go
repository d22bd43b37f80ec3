package codetool

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/scripthost/scripthost"
	"github.com/scripthost/scripthost/codegraph"
)

// Error codes of the code tools, in scripthost.Error.Code.
const (
	CodeSymbolNotFound     = "symbol_not_found"
	CodeAmbiguousSymbol    = "ambiguous_symbol"
	CodeSyntaxError        = "syntax_error"
	CodeUnsupportedFile    = "unsupported_file"
	CodeCheckerUnavailable = "checker_unavailable"
	CodeNoProject          = "project_not_found"
)

// Splice, for the tool op, replaces the whole span of symbol in src, a file called path, with with. The
// symbol is a name or Container.name and must name exactly one definition; a name
// with several is refused listing them. A result the parser rejects is refused with
// its syntax errors. It returns the new content and the symbol as it was.
func Splice(ctx context.Context, op, path string, src []byte, symbol string, with []byte) ([]byte, codegraph.Symbol, error) {
	l, ok := codegraph.LanguageOf(path)
	if !ok {
		return nil, codegraph.Symbol{}, logicErr(op, CodeUnsupportedFile, "%s: not a Go, Rust, JavaScript, TypeScript or Python file", path)
	}
	before, err := codegraph.Parse(ctx, l, path, src)
	if err != nil {
		return nil, codegraph.Symbol{}, err
	}
	sym, err := resolve(op, path, before.Symbols, symbol)
	if err != nil {
		return nil, codegraph.Symbol{}, err
	}
	// The replacement is the definition itself: a final newline in the file that
	// holds it would pile up blank lines after the span.
	with = bytes.TrimSuffix(with, []byte("\n"))
	out := make([]byte, 0, len(src)-(sym.EndByte-sym.StartByte)+len(with))
	out = append(out, src[:sym.StartByte]...)
	out = append(out, with...)
	out = append(out, src[sym.EndByte:]...)
	after, err := codegraph.Parse(ctx, l, path, out)
	if err != nil {
		return nil, codegraph.Symbol{}, err
	}
	if len(after.Errors) > 0 {
		var b strings.Builder
		for i, e := range after.Errors {
			if i == 3 {
				fmt.Fprintf(&b, "; and %d more", len(after.Errors)-3)
				break
			}
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s:%d:%d: %s", path, e.Line, e.Column, e.Message)
		}
		return nil, sym, logicErr(op, CodeSyntaxError, "replacing %s would break the syntax of %s, so the file is left as it was: %s", symbol, path, b.String())
	}
	return out, sym, nil
}

// resolve finds the one definition symbol names among syms.
func resolve(op, path string, syms []codegraph.Symbol, symbol string) (codegraph.Symbol, error) {
	var found []codegraph.Symbol
	for _, s := range syms {
		if s.Name == symbol || s.QualifiedName() == symbol {
			found = append(found, s)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return codegraph.Symbol{}, logicErr(op, CodeSymbolNotFound, "%s defines no symbol %q", path, symbol)
	}
	cands := make([]string, len(found))
	for i, s := range found {
		cands[i] = fmt.Sprintf("%s (%s, lines %d-%d)", s.QualifiedName(), s.Kind, s.StartLine, s.EndLine)
	}
	return codegraph.Symbol{}, logicErr(op, CodeAmbiguousSymbol, "%q names %d definitions in %s; name one of them: %s", symbol, len(found), path, strings.Join(cands, ", "))
}

func logicErr(op, code, format string, args ...any) *scripthost.Error {
	return &scripthost.Error{Class: scripthost.ClassLogic, Code: code, Op: op, Message: fmt.Sprintf(format, args...)}
}
