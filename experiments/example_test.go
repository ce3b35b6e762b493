package experiments_test

import (
	"fmt"

	"github.com/labrun/labrun/experiments"
)

// The command line checks an experiment before running it, with --client as the user gave it.
func ExampleCheck() {
	demo := experiments.NewInventory()
	demo.PropagateDeadline = true
	fmt.Println(experiments.Check(demo, ""))
	fmt.Println(experiments.Check(demo, "go"))
	fmt.Println(experiments.Check(experiments.NewFollowUps(), "go"))
	// Output:
	// <nil>
	// --propagate-deadline needs --client hc5: go sends no budget
	// --client: exp-d compares okhttp, go and hc5 by design; it takes no --client
}

func ExampleLookupProfile() {
	p, err := experiments.LookupProfile("okhttp")
	fmt.Println(p.Name+":", p.Library(), err)
	_, err = experiments.LookupProfile("curl")
	fmt.Println(err)
	// Output:
	// okhttp: OkHttp 3.13.1 <nil>
	// --client: unknown client "curl" (want hc5, okhttp, go, okhttp@3.2, okhttp@3.14, jdk, urlconnection, hc4)
}
