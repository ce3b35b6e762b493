package report

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// jsonIndent is the indentation of labrun's JSON: two spaces, no prefix.
const jsonIndent = "  "

// encodeJSON encodes v as writeJSON lays it out, refusing (before it builds the indented
// form) a result longer than limit bytes when limit > 0; name names the result in that error. It encodes compactly first, counts
// what indenting adds, and indents into a buffer of exactly that size: an indented document is
// several times its compact form, and building it in a growing buffer costs many times more.
func encodeJSON(v any, name string, limit int) ([]byte, error) {
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // Encode appends the newline.
		return nil, err
	}
	n := indentedLen(compact.Bytes())
	if limit > 0 && n > limit {
		return nil, &tooLargeError{name: name, size: n, limit: limit}
	}
	var out bytes.Buffer
	out.Grow(n)
	if err := json.Indent(&out, compact.Bytes(), "", jsonIndent); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// tooLargeError is a rendered file beyond its limit.
type tooLargeError struct {
	name        string
	size, limit int
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%s would be %d MiB, more than the %d MiB a saved run may be", e.name, e.size>>20, e.limit>>20)
}

// indentedLen is the length of json.Indent(compact, "", jsonIndent) for compact JSON (as an
// Encoder writes it: no space outside strings), computed without building it: json.Indent
// breaks the line after an opening bracket of a non-empty object or array, after each comma
// and before each closing bracket of a non-empty one, indents each new line by its depth,
// and puts a space after each colon.
func indentedLen(compact []byte) int {
	n, depth := 0, 0
	needIndent, inString, escaped := false, false, false
	newline := func() int { return 1 + depth*len(jsonIndent) }
	for _, c := range compact {
		n++
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if needIndent && c != '}' && c != ']' {
			needIndent = false
			depth++
			n += newline()
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			needIndent = true
		case ',':
			n += newline()
		case ':':
			n++
		case '}', ']':
			if needIndent {
				needIndent = false
			} else {
				depth--
				n += newline()
			}
		}
	}
	return n
}
