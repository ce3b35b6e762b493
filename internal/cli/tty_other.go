//go:build !unix

package cli

import "os"

// ttyColumns does not know the size of a terminal here.
func ttyColumns(*os.File) int { return 0 }
