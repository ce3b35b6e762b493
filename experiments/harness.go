package experiments

import (
	"github.com/labrun/labrun/experiments/internal/lab"
	"github.com/labrun/labrun/internal/fakesrv"
	"github.com/labrun/labrun/internal/param"
	"github.com/labrun/labrun/results"
)

// newRun starts the results of experiment e under the profiles it runs (lab.NewRun).
func newRun(e Experiment, opt Options) results.Run { return lab.NewRun(e, lab.Options(opt)) }

// atDocumented reports whether the documented figures apply: HttpClient 5 with the
// documented parameters.
func atDocumented(opt Options, ps, defaults []param.Param) bool {
	return lab.AtDocumented(lab.Options(opt), ps, defaults)
}

// newServer is lab.NewServer, by the name the gRPC rows use.
func newServer(opts ...fakesrv.Option) (*fakesrv.Server, error) { return lab.NewServer(opts...) }
