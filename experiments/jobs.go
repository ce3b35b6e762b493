package experiments

import (
	"context"
	"encoding/json"

	"github.com/labrun/labrun/experiments/internal/vanish"
)

// Jobs are work a binary runs in a network namespace child of its own, by name: each decodes
// its input and returns its output, which the parent reads as JSON.
type Jobs map[string]func(ctx context.Context, input json.RawMessage) (any, error)

// NamespaceJobs lists the jobs exp-i (experiments/vanish) runs in a namespace child. A binary that runs exp-i
// dispatches them first thing in its main (labrun's does).
func NamespaceJobs() Jobs {
	jobs := Jobs{}
	for name, job := range vanish.Jobs() {
		jobs[name] = job
	}
	return jobs
}
