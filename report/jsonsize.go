package report

import (
	"bytes"
	"encoding/json"
	"fmt"
)

const jsonIndent = "  "

// encodeJSON encodes v as writeJSON lays it out, refusing a result over limit bytes (limit > 0;
// name names it) before building it. It counts what indenting adds to the compact form and
// indents into a buffer of exactly that size, as a growing buffer costs many times more.
func encodeJSON(v any, name string, limit int) ([]byte, error) {
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
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

type tooLargeError struct {
	name        string
	size, limit int
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%s would be %d MiB, more than the %d MiB a saved run may be", e.name, e.size>>20, e.limit>>20)
}

// indentedLen is len(json.Indent(compact, "", jsonIndent)) for an Encoder's compact JSON,
// computed without building it.
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
