package results

import "github.com/labrun/labrun/internal/vocab"

// The outcome words, for a caller outside the module (labtest's rows) to compare with.
const (
	OK             = vocab.OK
	LeaseTimeout   = vocab.LeaseTimeout
	ConnectTimeout = vocab.ConnectTimeout
	ReadTimeout    = vocab.ReadTimeout
	Deadline       = vocab.Deadline
	KernelTimeout  = vocab.KernelTimeout
	Hang           = vocab.Hang
	DNSError       = vocab.DNSError
	TLSError       = vocab.TLSError
	Failed         = vocab.Failed
)
