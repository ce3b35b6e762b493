package predict

import (
	"fmt"
	"strings"

	"github.com/labrun/labrun/model"
	"github.com/labrun/labrun/results"
)

// PresetNames lists the names --defaults takes.
func PresetNames() []string {
	var names []string
	for _, p := range model.Presets() {
		names = append(names, p.Name)
	}
	return names
}

// PresetsHelp describes every preset in a few lines, for labrun predict --help.
func PresetsHelp() string {
	var b strings.Builder
	for _, p := range model.Presets() {
		fmt.Fprintf(&b, "   %-14s %s: lease %s; connect %s; read %s; pool %s; whole call %s\n",
			p.Name, p.Client, p.Lease, p.Connect, p.Read, p.Pool, p.Call)
	}
	return b.String()
}

// Defaults returns lab-spec section 4's client defaults and Go's, for labrun defaults.
func Defaults() []results.ClientDefaults {
	var out []results.ClientDefaults
	for _, p := range model.Presets() {
		out = append(out, results.ClientDefaults{
			Name: p.Name, Client: p.Client, Lease: p.Lease, Connect: p.Connect,
			Read: p.Read, Pool: p.Pool, Call: p.Call, Source: p.Source,
		})
	}
	return out
}
