//go:build labrun_regress_dial

package regress

import "time"

// Dial is added to every dial of the client (client.dialOne).
const Dial = 30 * time.Millisecond
