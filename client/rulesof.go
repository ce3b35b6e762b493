package client

import (
	"fmt"

	"github.com/labrun/labrun/internal/rules"
)

// Rules are one library's decisions as labrun reads them from its source (labrun defaults
// cites each); Config.Rules takes them.
type Rules = rules.Rules

// RulesOf returns the rules of the library preset called name (a name labrun defaults lists)
// at the library's own settings; "" is labrun's own: HttpClient 5's, nothing re-sent.
func RulesOf(name string) (Rules, error) {
	p, ok := rules.Lookup(name)
	if !ok {
		return Rules{}, fmt.Errorf("client: no library preset %q (labrun defaults lists them)", name)
	}
	return p.Default(), nil
}
