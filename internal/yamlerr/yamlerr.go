// Package yamlerr corrects the line numbers of gopkg.in/yaml.v3's syntax errors, so a
// YAML error names the line a person must look at.
//
// yaml.v3 reports a parser error ("did not find expected …") at the 0-based line of
// the construct it was parsing, one less than the line an editor shows; its scanner
// errors are already 1-based.
package yamlerr

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
)

var parserError = regexp.MustCompile(`^yaml: line (\d+): (did not find expected .*)$`)

// Fix returns err with its line number corrected, or err unchanged when it is not a
// yaml.v3 parser error. The result does not wrap err: its text is the whole message.
func Fix(err error) error {
	if err == nil {
		return nil
	}
	m := parserError.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	n, convErr := strconv.Atoi(m[1])
	if convErr != nil {
		return err
	}
	return errors.New(fmt.Sprintf("yaml: line %d: %s", n+1, m[2]))
}
